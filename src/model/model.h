#pragma once
// The unified factorized model every family loads into and every backend runs.
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"
#include "model/linear.h"

namespace fsvd {

struct Layer {
  Tensor attn_norm;  // [hidden]
  Tensor mlp_norm;   // [hidden]
  Linear q, k, v, o, gate, up, down;
  // Built by Model::pack(): q|k|v and gate|up first factors stacked.
  PackedLinear qkv, gate_up;
};

struct Model {
  ModelConfig config;
  std::string family;  // where it came from: "llama2c", "gguf", "hf", ...
  std::string source;  // path it was loaded from
  Tensor embed;        // [vocab, hidden]
  Tensor final_norm;   // [hidden]
  Linear lm_head;      // [vocab, hidden]; shares embed's storage when tied
  std::vector<Layer> layers;

  // Checks every shape against the config; throws Error naming `source`.
  void validate() const;
  // Stacks q|k|v and gate|up first factors (see PackedLinear). Idempotent.
  void pack();
  // pack() for one layer, after its linears were replaced.
  void pack_layer(int index);
  // validate(), then throws unless pack() has run: backends read the packs.
  // `user` names the backend in the message.
  void validate_packed(const std::string& user) const;
  // Parameters and resident bytes counting each shared storage once.
  int64_t unique_params() const;
};

}  // namespace fsvd
