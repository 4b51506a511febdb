#pragma once
// Basis Sharing: a Hugging Face directory whose config.json names
// ShareLlamaForCausalLM and lists, per matrix type m, `m_groups` (layers that
// share one basis) and `num_basis_m`; weights are torch state dicts
// (pytorch_model.bin or shards listed by pytorch_model.bin.index.json).
// `<m>_basis` [num_basis, in] is the first factor, shared by the group, and
// `<m>_proj` [out, num_basis] the per-layer second factor. Each group's basis
// is loaded once and every member layer references that one storage.
#include <string>

#include "model/model.h"

namespace fsvd {

std::string basis_sharing_mismatch(const std::string& path);
Model load_basis_sharing(const std::string& dir);

}  // namespace fsvd
