#pragma once
// Dense Hugging Face directories (config.json + safetensors) of the LLaMA
// family: model_type llama, mistral or qwen2. RoPE is already rotate_half.
#include <string>

#include "model/model.h"

namespace fsvd {

std::string hf_mismatch(const std::string& path);
Model load_hf(const std::string& dir);

}  // namespace fsvd
