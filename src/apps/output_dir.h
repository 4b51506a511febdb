#pragma once
// Where commands that write a model directory (convert, compress) may write.
#include <string>

namespace fsvd {

// Passes when `out` does not exist or is an empty directory, or a non-empty
// one with `force`; never when it is `input` itself. Throws Error naming `out`.
void check_output_dir(const std::string& input, const std::string& out, bool force);

}  // namespace fsvd
