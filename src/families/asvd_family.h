#pragma once
// ASVD: a Hugging Face safetensors directory whose config.json names
// ASVDLlamaForCausalLM (model_type llama) and lists the compressed linears in
// `truncation_ranks` {module name: rank}; those are stored in the ABLinear
// layout (ab_linear.h: BLinear first, ALinear second with the bias), the rest
// dense. Any linear may be compressed, lm_head included.
#include <string>

#include "model/model.h"

namespace fsvd {

std::string asvd_mismatch(const std::string& path);
Model load_asvd(const std::string& dir);

}  // namespace fsvd
