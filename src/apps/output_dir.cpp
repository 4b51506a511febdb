#include "apps/output_dir.h"

#include <filesystem>

#include "core/error.h"

namespace fsvd {

namespace fs = std::filesystem;

void check_output_dir(const std::string& input, const std::string& out, bool force) {
  std::error_code ec;
  if (!fs::exists(out)) return;
  check(fs::is_directory(out), out, "exists and is not a directory");
  check(!fs::equivalent(input, out, ec), out, "is the input; write the new model elsewhere");
  check(force || fs::is_empty(out), out, "is not empty; pass --force to replace the model in it");
}

}  // namespace fsvd
