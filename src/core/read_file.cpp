#include "core/read_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace fsvd {

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path, "cannot open", what.empty() ? "" : " " + what);
  std::ostringstream os;
  os << in.rdbuf();
  check(!in.bad(), path, "read error");
  return os.str();
}

}  // namespace fsvd
