#pragma once
// LowRankArena exports: a Hugging Face safetensors directory whose config.json
// has model_type lowrank_llama (LowRankLlamaForCausalLM), lists the factorized
// linears in `low_rank_modules` {module name: {"rank": r}} and declares
// `low_rank_schema` "ABLinear": those linears are stored in the ABLinear layout
// (ab_linear.h: BLinear first, ALinear second with the bias), the rest dense.
#include <string>

#include "model/model.h"

namespace fsvd {

std::string lowrank_arena_mismatch(const std::string& path);
Model load_lowrank_arena(const std::string& dir);

}  // namespace fsvd
