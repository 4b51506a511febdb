#pragma once
// Where tests find real data that is not committed: ../shared/data and the
// default model's GGUF. Tests skip (GTEST_SKIP) when a path is empty.
#include <string>

namespace fsvd::testing {

// FLASHSVD_SHARED_DATA/<relative> if that file exists, else "".
std::string shared_data(const std::string& relative);

// The SmolLM2-135M-Instruct Q4_1 GGUF: $FLASHSVD_SMOLLM2_GGUF, else the user
// cache that `flashsvd pull` fills, else a scratch copy in /tmp/smol; "" if none exists.
std::string smollm2_gguf();

// The all-MiniLM-L6-v2 directory: $FLASHSVD_MINILM_DIR, else the user cache
// that `flashsvd pull --encoder` fills; "" if none exists.
std::string minilm_dir();

// A committed fixture under tests/fixtures/.
std::string fixture(const std::string& relative);

}  // namespace fsvd::testing
