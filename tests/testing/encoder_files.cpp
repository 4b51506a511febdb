#include "testing/encoder_files.h"

namespace fsvd::testing {

test::StTensor st_tensor(const std::string& name, const Tensor& t) {
  std::vector<float> v(t.data(), t.data() + t.numel());
  return {name, "F32", t.shape(), test::as_bytes(v)};
}

std::vector<test::StTensor> encoder_hf_tensors(const EncoderModel& m, const std::string& prefix) {
  const bool distil = m.config.arch == "distilbert";
  std::vector<test::StTensor> out = {st_tensor(prefix + "embeddings.word_embeddings.weight", m.word_embed),
                                     st_tensor(prefix + "embeddings.position_embeddings.weight", m.position_embed),
                                     st_tensor(prefix + "embeddings.LayerNorm.weight", m.embed_norm.weight),
                                     st_tensor(prefix + "embeddings.LayerNorm.bias", m.embed_norm.bias)};
  if (!distil) out.push_back(st_tensor(prefix + "embeddings.token_type_embeddings.weight", m.type_embed));
  auto add = [&](const std::string& name, const Tensor& w, const Tensor& b) {
    out.push_back(st_tensor(name + ".weight", w));
    out.push_back(st_tensor(name + ".bias", b));
  };
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const EncoderLayer& l = m.layers[i];
    const std::string p = prefix + (distil ? "transformer.layer." : "encoder.layer.") + std::to_string(i) + ".";
    const std::pair<std::string, const Linear*> linears[] = {
        {distil ? "attention.q_lin" : "attention.self.query", &l.q},
        {distil ? "attention.k_lin" : "attention.self.key", &l.k},
        {distil ? "attention.v_lin" : "attention.self.value", &l.v},
        {distil ? "attention.out_lin" : "attention.output.dense", &l.o},
        {distil ? "ffn.lin1" : "intermediate.dense", &l.up},
        {distil ? "ffn.lin2" : "output.dense", &l.down}};
    for (const auto& [name, lin] : linears) add(p + name, lin->first, lin->bias);
    add(p + (distil ? "sa_layer_norm" : "attention.output.LayerNorm"), l.attn_norm.weight, l.attn_norm.bias);
    add(p + (distil ? "output_layer_norm" : "output.LayerNorm"), l.mlp_norm.weight, l.mlp_norm.bias);
  }
  return out;
}

nlohmann::json bert_config_json(const EncoderConfig& c) {
  return {{"model_type", "bert"},         {"architectures", {"BertModel"}},
          {"hidden_size", c.hidden},      {"intermediate_size", c.intermediate},
          {"num_hidden_layers", c.n_layers}, {"num_attention_heads", c.n_heads},
          {"vocab_size", c.vocab},        {"max_position_embeddings", c.max_positions},
          {"type_vocab_size", c.type_vocab}, {"hidden_act", "gelu"},
          {"layer_norm_eps", 1e-12}};
}

}  // namespace fsvd::testing
