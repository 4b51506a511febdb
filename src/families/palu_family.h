#pragma once
// Palu (low-rank KV projections): a save_pretrained safetensors directory whose
// config.json has "model_type": "palullama" and "head_wise_ranks" {module:
// [r_g, ...]}. Only k_proj and v_proj are factorized, per group of heads:
// `<proj>.VT.weight` [sum r_g, hidden] (first; its output is the cached latent)
// and `<proj>.U.{g}.weight` [group_dim, r_g] for each group g (second).
// Ranks come from the tensors; head_wise_ranks must agree with them.
#include <string>

#include "model/model.h"

namespace fsvd {

std::string palu_mismatch(const std::string& path);
Model load_palu(const std::string& dir);

}  // namespace fsvd
