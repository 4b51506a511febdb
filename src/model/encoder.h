#pragma once
// The unified BERT-family encoder (BERT, RoBERTa, DistilBERT, MiniLM and
// sentence-transformers models): post-LayerNorm layers with biases, GELU,
// absolute position and token-type embeddings. A sibling of the decoder's
// `Model` (docs/architecture.md, "Encoders"): the same factor-chain linears
// and q|k|v pack, none of the decoder's RoPE, RMSNorm, gate or KV cache.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/linear.h"

namespace fsvd {

struct EncoderConfig {
  std::string arch;  // "bert", "roberta" or "distilbert" (names in messages only)
  int hidden = 0;
  int intermediate = 0;
  int n_layers = 0;
  int n_heads = 0;
  int vocab = 0;
  int max_positions = 0;  // rows of the position table
  int type_vocab = 0;     // rows of the token-type table; 0: none (DistilBERT)
  int position_offset = 0;  // position of the first token (RoBERTa: padding_idx + 1)
  float ln_eps = 1e-12f;

  int head_dim() const { return n_heads > 0 ? hidden / n_heads : 0; }
  // Longest input the position table allows.
  int max_tokens() const { return max_positions - position_offset; }
  // Throws Error(where, ...) if the numbers are inconsistent or out of range.
  void validate(const std::string& where) const;
};

// LayerNorm's scale and shift.
struct LayerNormWeights {
  Tensor weight;  // [hidden]
  Tensor bias;    // [hidden]
};

struct EncoderLayer {
  Linear q, k, v, o, up, down;  // up/down: the GELU MLP
  LayerNormWeights attn_norm;   // after the attention residual
  LayerNormWeights mlp_norm;    // after the MLP residual
  PackedLinear qkv;             // built by EncoderModel::pack()
};

// How token states become one vector (sentence-transformers' Pooling module).
enum class Pooling { cls, mean, max };
const char* pooling_name(Pooling p);

// A sequence-classification head on the first token's state:
// out(activation(pre(x))). BERT: pooler + tanh; RoBERTa: dense + tanh;
// DistilBERT: pre_classifier + ReLU.
struct ClassifierHead {
  enum class Activation { tanh, relu };
  Linear pre;  // [hidden, hidden]
  Activation activation = Activation::tanh;
  Linear out;                       // [labels, hidden]
  std::vector<std::string> labels;  // id2label, in id order
  bool empty() const { return out.first.empty(); }
};

// The model input of one sequence or pair: `[CLS] A [SEP]` (type 0) then `B [SEP]` (type 1).
struct EncoderInput {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
};

struct EncoderModel {
  EncoderConfig config;
  std::string family;  // "hf_encoder"
  std::string source;  // path it was loaded from
  Tensor word_embed;   // [vocab, hidden]
  Tensor position_embed;  // [max_positions, hidden]
  Tensor type_embed;      // [type_vocab, hidden], empty when type_vocab == 0
  LayerNormWeights embed_norm;
  std::vector<EncoderLayer> layers;
  // sentence-transformers' settings; a plain transformers model gets mean pooling, no normalization.
  Pooling pooling = Pooling::mean;
  bool normalize = false;  // L2-normalize the pooled vector
  int max_tokens = 0;      // inputs are truncated to this many tokens (specials included)
  ClassifierHead classifier;  // empty unless a sequence-classification model

  // Checks every shape against the config; throws Error naming `source`.
  void validate() const;
  // Stacks q|k|v first factors (see PackedLinear). Idempotent.
  void pack();
  // Parameters counting each shared storage once.
  int64_t unique_params() const;
};

}  // namespace fsvd
