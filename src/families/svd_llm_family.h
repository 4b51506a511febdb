#pragma once
// SVD-LLM (v1, and v2 which writes the same form): a whole-model torch.save
// pickle {'model': LlamaForCausalLM, 'tokenizer': ...} whose attention and MLP
// modules are component.svd_llama.SVD_Llama{Attention,MLP} holding each
// linear as `<name>_v_proj` (first factor [r, in]) and `<name>_u_proj`
// (second factor [out, r]). The config is the pickled LlamaConfig's fields,
// but RoPE is what the saved inv_freq buffers say (families/pickled_rope.h).
#include <string>

#include "model/model.h"

namespace fsvd {

std::string svd_llm_mismatch(const std::string& path);
Model load_svd_llm(const std::string& path);

}  // namespace fsvd
