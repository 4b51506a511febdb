#pragma once
// Runs the flashsvd binary as a user would, capturing exit code and streams.
#include <string>

namespace fsvd::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// `args` is appended to the binary's path and run through the shell.
CliResult run_cli(const std::string& args);

}  // namespace fsvd::testing
