#include "testing/temp_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

namespace fsvd::test {

std::string unique_temp_path(const std::string& stem) {
  static std::atomic<int> counter = 0;
  return ::testing::TempDir() + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

}  // namespace fsvd::test
