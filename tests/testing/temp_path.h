#pragma once
// A path under the test temp dir that no other test process uses: ctest runs
// the tests as parallel processes, so fixed names would race.
#include <string>

namespace fsvd::test {

// <temp dir><stem>_<pid>_<counter>; nothing is created there.
std::string unique_temp_path(const std::string& stem);

}  // namespace fsvd::test
