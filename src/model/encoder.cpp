#include "model/encoder.h"

#include "core/error.h"
#include "model/pack_cache.h"
#include "model/storage_counter.h"

namespace fsvd {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::cls: return "cls";
    case Pooling::mean: return "mean";
    case Pooling::max: return "max";
  }
  return "?";
}

void EncoderConfig::validate(const std::string& where) const {
  check(hidden > 0 && intermediate > 0 && n_layers > 0 && n_heads > 0 && vocab > 0, where,
        "hidden, intermediate, layers, heads and vocab must be positive (got ", hidden, ", ", intermediate, ", ",
        n_layers, ", ", n_heads, ", ", vocab, ")");
  check(hidden % n_heads == 0, where, "hidden size ", hidden, " is not a multiple of the ", n_heads, " heads");
  check(type_vocab >= 0 && position_offset >= 0, where, "type vocabulary ", type_vocab, " and position offset ",
        position_offset, " must not be negative");
  check(max_positions > position_offset + 2, where, "max_position_embeddings ", max_positions,
        " leaves no room for a sequence after the position offset ", position_offset);
  check(ln_eps > 0, where, "layer_norm_eps must be positive, got ", ln_eps);
}

void EncoderModel::validate() const {
  const EncoderConfig& c = config;
  c.validate(source);
  auto matrix = [&](const Tensor& t, int64_t rows, const std::string& what) {
    check(!t.empty() && t.ndim() == 2 && t.dim(0) == rows && t.dim(1) == c.hidden, source, what, " has shape ",
          t.empty() ? std::string("(missing)") : t.shape_str(), ", expected [", rows, ", ", c.hidden, "]");
  };
  auto norm = [&](const LayerNormWeights& n, const std::string& what) {
    for (const Tensor* t : {&n.weight, &n.bias})
      check(!t->empty() && t->ndim() == 1 && t->dim(0) == c.hidden, source, what, " has shape ",
            t->empty() ? std::string("(missing)") : t->shape_str(), ", expected [", c.hidden, "]");
  };
  matrix(word_embed, c.vocab, "word embedding");
  matrix(position_embed, c.max_positions, "position embedding");
  if (c.type_vocab > 0) matrix(type_embed, c.type_vocab, "token-type embedding");
  norm(embed_norm, "embedding LayerNorm");
  check(static_cast<int>(layers.size()) == c.n_layers, source, "has ", layers.size(), " layers, config says ",
        c.n_layers);
  for (size_t i = 0; i < layers.size(); ++i) {
    const EncoderLayer& l = layers[i];
    const std::string at = source + ": layer " + std::to_string(i) + " ";
    for (const Linear* qkv : {&l.q, &l.k, &l.v}) qkv->validate(c.hidden, c.hidden, at + "q/k/v");
    l.o.validate(c.hidden, c.hidden, at + "o");
    l.up.validate(c.intermediate, c.hidden, at + "up");
    l.down.validate(c.hidden, c.intermediate, at + "down");
    norm(l.attn_norm, at + "attention LayerNorm");
    norm(l.mlp_norm, at + "MLP LayerNorm");
  }
  check(max_tokens > 2 && max_tokens <= c.max_tokens(), source, "maximum input length ", max_tokens,
        " must be in 3..", c.max_tokens(), " (the position table)");
  if (!classifier.empty()) {
    classifier.pre.validate(c.hidden, c.hidden, source + ": classifier dense");
    classifier.out.validate(static_cast<int64_t>(classifier.labels.size()), c.hidden, source + ": classifier");
  }
}

void EncoderModel::pack() {
  PackCache cache;
  for (EncoderLayer& l : layers) l.qkv = pack_in_place({&l.q, &l.k, &l.v}, cache);
}

int64_t EncoderModel::unique_params() const {
  StorageCounter count;
  for (const Tensor* t : {&word_embed, &position_embed, &type_embed, &embed_norm.weight, &embed_norm.bias})
    count.add(*t);
  for (const EncoderLayer& l : layers) {
    for (const Linear* lin : {&l.q, &l.k, &l.v, &l.o, &l.up, &l.down}) count.add(*lin);
    for (const Tensor* t : {&l.attn_norm.weight, &l.attn_norm.bias, &l.mlp_norm.weight, &l.mlp_norm.bias}) count.add(*t);
  }
  count.add(classifier.pre);
  count.add(classifier.out);
  return count.total();
}

}  // namespace fsvd
