#pragma once
// The RoPE a pickled model really computes with. SVD-LLM's attention builds
// its rotary embedding without the config's rope_theta, so its checkpoints
// rotate with base 10000 whatever the config says; the inv_freq buffers the
// model saves (`...rotary_emb.inv_freq` = 1 / base^(2i / head_dim)) say
// which base that is.
#include <map>
#include <string>

#include "core/tensor.h"
#include "formats/torch_archive.h"
#include "model/config.h"

namespace fsvd {

// The archive's saved `rotary_emb.inv_freq` buffers, by name.
std::map<std::string, Tensor> saved_inv_freqs(const TorchArchive& archive);

// `config` with the RoPE those buffers encode: unchanged when there are none
// or they match the config; else rope_theta becomes their base (without any
// rope_scaling), said in one line on stderr. Throws Error naming `where` when
// they disagree between layers or are not 1 / base^(2i / head_dim).
ModelConfig rope_from_inv_freq(const std::map<std::string, Tensor>& inv_freqs, ModelConfig config,
                               const std::string& where);

}  // namespace fsvd
