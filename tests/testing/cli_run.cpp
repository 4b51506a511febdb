#include "testing/cli_run.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "testing/files.h"

namespace fsvd::testing {

namespace fs = std::filesystem;

CliResult run_cli(const std::string& args) {
  const fs::path dir = test::unique_temp_path("flashsvd_run_cli");
  fs::create_directories(dir);
  const std::string cmd = std::string(FLASHSVD_BINARY) + " " + args + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  const int status = std::system(cmd.c_str());
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::read_file(dir / "out"), test::read_file(dir / "err")};
  fs::remove_all(dir);
  return r;
}

}  // namespace fsvd::testing
