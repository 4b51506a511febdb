#include "families/loading.h"

#include <sstream>

#include "core/error.h"

namespace fsvd {

TensorTaker::TensorTaker(const std::vector<std::string>& names, Loader load, std::string where)
    : names_(names.begin(), names.end()), load_(std::move(load)), where_(std::move(where)) {}

Tensor TensorTaker::take(const std::string& name, const std::vector<int64_t>& shape) {
  check(contains(name), where_, "tensor ", name, " not found");
  Tensor t = load_(name);
  if (t.shape() != shape) {
    std::ostringstream expected;
    expected << '[';
    for (size_t i = 0; i < shape.size(); ++i) expected << (i ? ", " : "") << shape[i];
    expected << ']';
    fail(where_, "tensor ", name, " has shape ", t.shape_str(), " but the config implies ", expected.str());
  }
  used_.insert(name);
  return t;
}

Tensor TensorTaker::take_optional(const std::string& name, const std::vector<int64_t>& shape) {
  return contains(name) ? take(name, shape) : Tensor();
}

void TensorTaker::check_all_used() const {
  std::ostringstream unused;
  size_t count = 0;
  for (const std::string& n : names_) {
    if (used_.count(n)) continue;
    if (count < 5) unused << (count ? ", " : "") << n;
    ++count;
  }
  if (count > 5) unused << ", ... (" << count << " in all)";
  check(count == 0, where_, "unsupported model: tensors this loader does not know: ", unused.str());
}

Model finish_model(Model model) {
  model.validate();
  model.pack();
  return model;
}

void take_hf_embeddings_and_norms(Model& m, TensorTaker& t, const std::string& where) {
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden;
  m.embed = t.take("model.embed_tokens.weight", {c.vocab, d});
  m.final_norm = t.take("model.norm.weight", {d});
  if (!m.lm_head.first.empty()) {
    // set by the family
  } else if (c.tied_embeddings) {
    t.skip("lm_head.weight");
    m.lm_head.first = m.embed;
  } else {
    check(t.contains("lm_head.weight"), where,
          "tensor lm_head.weight not found and the config does not set tie_word_embeddings");
    m.lm_head.first = t.take("lm_head.weight", {c.vocab, d});
  }
  m.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    m.layers[i].attn_norm = t.take(p + "input_layernorm.weight", {d});
    m.layers[i].mlp_norm = t.take(p + "post_attention_layernorm.weight", {d});
  }
}

}  // namespace fsvd
