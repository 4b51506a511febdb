#include "testing/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

namespace fsvd::test {

std::string unique_temp_path(const std::string& stem) {
  static std::atomic<int> counter = 0;
  return ::testing::TempDir() + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace fsvd::test
