#pragma once
// Whole-model torch.save pickles {'model': LlamaForCausalLM, 'tokenizer': ...}
// (SVD-LLM, Dobi-SVD's non-remapped form): the pieces every such family
// reads besides the tensors, from the restricted unpickler's inert records.
#include <initializer_list>
#include <string>
#include <string_view>

#include "families/hf_config.h"
#include "families/loading.h"
#include "formats/torch_archive.h"

namespace fsvd {

// Family::mismatch for such files: "" when `path` is a torch.save zip whose
// data.pkl mentions every one of `needles` (module paths or class names of
// the family), else why not. Reads only the pickle's bytes.
std::string torch_pickle_mismatch(const std::string& path, std::initializer_list<std::string_view> needles);

// The pickled LlamaConfig's fields as config.json would hold them, parsed;
// `family` names the family in errors. Only LlamaForCausalLM with
// model_type llama is accepted.
HfConfig read_pickled_llama_config(const TorchArchive& archive, const std::string& family);

// A TensorTaker over every tensor of the archive (errors name its path).
// RoPE tables kept as module buffers (`rotary_emb.`) count as used: they
// follow from the config.
TensorTaker archive_tensors(const TorchArchive& archive);

// "module.Class" of the submodule at dotted `path` under the pickled model
// ("lm_head", "model.layers.0.self_attn.q_proj"), or "" when there is none.
std::string pickled_module_class(const TorchArchive& archive, const std::string& path);

}  // namespace fsvd
