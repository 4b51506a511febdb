#include "model/model.h"

#include "core/error.h"
#include "model/pack_cache.h"
#include "model/storage_counter.h"

namespace fsvd {

void Model::validate() const {
  const ModelConfig& c = config;
  c.validate(source);
  auto vec = [&](const Tensor& t, int64_t n, const std::string& what) {
    check(!t.empty() && t.ndim() == 1 && t.dim(0) == n, source, what, " has shape ",
          t.empty() ? std::string("(missing)") : t.shape_str(), ", expected [", n, "]");
  };
  check(!embed.empty() && embed.ndim() == 2 && embed.dim(0) == c.vocab && embed.dim(1) == c.hidden,
        source, "token embedding has shape ", embed.empty() ? std::string("(missing)") : embed.shape_str(),
        ", expected [", c.vocab, ", ", c.hidden, "]");
  vec(final_norm, c.hidden, "final norm");
  lm_head.validate(c.vocab, c.hidden, source + ": lm_head");
  check(static_cast<int>(layers.size()) == c.n_layers, source, "has ", layers.size(),
        " layers, config says ", c.n_layers);
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    const std::string at = source + ": layer " + std::to_string(i) + " ";
    vec(l.attn_norm, c.hidden, at + "attention norm");
    vec(l.mlp_norm, c.hidden, at + "mlp norm");
    l.q.validate(q_out, c.hidden, at + "q");
    l.k.validate(kv_out, c.hidden, at + "k");
    l.v.validate(kv_out, c.hidden, at + "v");
    l.o.validate(c.hidden, q_out, at + "o");
    l.gate.validate(c.intermediate, c.hidden, at + "gate");
    l.up.validate(c.intermediate, c.hidden, at + "up");
    l.down.validate(c.hidden, c.intermediate, at + "down");
  }
}

void Model::validate_packed(const std::string& user) const {
  validate();
  for (size_t i = 0; i < layers.size(); ++i)
    check(layers[i].qkv.parts.size() == 3 && layers[i].gate_up.parts.size() == 2, source, "layer ", i,
          " is not packed (Model::pack() must run before ", user, ")");
}

namespace {

void pack_into(Layer& l, PackCache& cache) {
  l.qkv = pack_in_place({&l.q, &l.k, &l.v}, cache);
  l.gate_up = pack_in_place({&l.gate, &l.up}, cache);
}

}  // namespace

void Model::pack() {
  PackCache cache;
  for (Layer& l : layers) pack_into(l, cache);
}

void Model::pack_layer(int index) {
  PackCache cache;
  pack_into(layers.at(index), cache);
}

int64_t Model::unique_params() const {
  StorageCounter count;
  count.add(embed);
  count.add(final_norm);
  count.add(lm_head);
  for (const Layer& l : layers) {
    count.add(l.attn_norm);
    count.add(l.mlp_norm);
    for (const Linear* lin : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) count.add(*lin);
  }
  return count.total();
}

}  // namespace fsvd
