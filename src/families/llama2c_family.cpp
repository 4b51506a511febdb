#include "families/llama2c_family.h"

#include "core/error.h"
#include "families/loading.h"
#include "families/rope_layout.h"

namespace fsvd {

std::string llama2c_mismatch(const std::string& path) {
  // The layout is recognised by its header agreeing with the exact file size.
  try {
    Llama2cFile file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Model load_llama2c(const std::string& path) { return llama2c_to_model(Llama2cFile(path)); }

Model llama2c_to_model(const Llama2cFile& file) {
  const Llama2cHeader& h = file.header();
  Model m;
  m.family = "llama2c";
  m.source = file.path();
  ModelConfig& c = m.config;
  c.hidden = h.dim;
  c.intermediate = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.head_size();
  c.vocab = h.vocab_size;
  c.max_seq = h.seq_len;
  c.rope_theta = 10000.0f;  // fixed in llama2.c's run.c
  c.rms_eps = 1e-5f;        // fixed in llama2.c's run.c
  c.tied_embeddings = h.shared_classifier;

  m.embed = file.load_f32("token_embedding");
  m.final_norm = file.load_f32("rms_final");
  m.lm_head.first = h.shared_classifier ? m.embed : file.load_f32("wcls");

  // Per-layer tensors are stacked over layers in the file; layers take views.
  const Tensor rms_att = file.load_f32("rms_att"), rms_ffn = file.load_f32("rms_ffn");
  const Tensor wq = file.load_f32("wq"), wk = file.load_f32("wk"), wv = file.load_f32("wv"),
               wo = file.load_f32("wo"), w1 = file.load_f32("w1"), w2 = file.load_f32("w2"),
               w3 = file.load_f32("w3");
  auto layer_of = [](const Tensor& stacked, int64_t l) {
    std::vector<int64_t> shape(stacked.shape().begin() + 1, stacked.shape().end());
    return stacked.rows(l, l + 1).reshaped(shape);
  };
  m.layers.resize(h.n_layers);
  for (int l = 0; l < h.n_layers; ++l) {
    Layer& y = m.layers[l];
    const std::string at = file.path() + ": layer " + std::to_string(l);
    y.attn_norm = layer_of(rms_att, l);
    y.mlp_norm = layer_of(rms_ffn, l);
    y.q.first = interleaved_to_half_rope_rows(layer_of(wq, l), h.n_heads, at + " wq");
    y.k.first = interleaved_to_half_rope_rows(layer_of(wk, l), h.n_kv_heads, at + " wk");
    y.v.first = layer_of(wv, l);
    y.o.first = layer_of(wo, l);
    y.gate.first = layer_of(w1, l);
    y.down.first = layer_of(w2, l);
    y.up.first = layer_of(w3, l);
  }
  return finish_model(std::move(m));
}

}  // namespace fsvd
