#pragma once
// Files the tests write and read back.
#include <string>

namespace fsvd::test {

// <temp dir><stem>_<pid>_<counter>, a name no other test process uses (ctest
// runs tests as parallel processes, so fixed names would race); nothing is
// created there.
std::string unique_temp_path(const std::string& stem);

// The whole file as bytes in a string ("" if it cannot be read).
std::string read_file(const std::string& path);

}  // namespace fsvd::test
