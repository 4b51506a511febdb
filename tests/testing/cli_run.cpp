#include "testing/cli_run.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/temp_path.h"

namespace fsvd::testing {

namespace fs = std::filesystem;

static std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliResult run_cli(const std::string& args) {
  const fs::path dir = test::unique_temp_path("flashsvd_run_cli");
  fs::create_directories(dir);
  const std::string cmd = std::string(FLASHSVD_BINARY) + " " + args + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  const int status = std::system(cmd.c_str());
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

}  // namespace fsvd::testing
