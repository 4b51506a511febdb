#pragma once
// BERT-family encoders stored as Hugging Face directories (config.json +
// safetensors), plain or in the sentence-transformers layout, including
// sequence-classification models with their label names.
#include <string>

#include "model/encoder.h"

namespace fsvd {

// Why `path` is not an encoder directory, or "" when it is.
std::string encoder_mismatch(const std::string& path);
// A validated, packed encoder; throws Error naming the file and the problem.
EncoderModel load_encoder(const std::string& path);

}  // namespace fsvd
