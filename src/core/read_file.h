#pragma once
// A whole (small) file as a string: configs, manifests, texts.
#include <string>

namespace fsvd {

// Throws Error naming `path` when it cannot be opened or read; `what` (e.g.
// "the text file") is added to the message when given.
std::string read_file(const std::string& path, const std::string& what = "");

}  // namespace fsvd
