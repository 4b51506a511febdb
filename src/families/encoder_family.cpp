#include "families/encoder_family.h"

#include <filesystem>

#include "core/error.h"
#include "core/read_file.h"
#include "families/config_json.h"
#include "families/encoder_config.h"
#include "families/encoder_names.h"
#include "families/hf_weights.h"
#include "families/loading.h"
#include "families/sentence_transformers.h"

namespace fsvd {

namespace {

namespace fs = std::filesystem;

// Checkpoints of the bare model store names without a prefix; task models
// (and some exports of bare ones) under the model_type's attribute name.
std::string find_prefix(const TensorTaker& t, const std::string& arch, const std::string& where) {
  for (const std::string& p : {std::string(), arch + "."})
    if (t.contains(p + "embeddings.word_embeddings.weight")) return p;
  fail(where, "no tensor embeddings.word_embeddings.weight (nor ", arch, ".embeddings.word_embeddings.weight)");
}

void load_classifier(EncoderModel& m, const EncoderHfConfig& hf, TensorTaker& t, const std::string& prefix) {
  const int64_t d = m.config.hidden, n = static_cast<int64_t>(hf.labels.size());
  auto linear = [&](const std::string& name, int64_t out) {
    return Linear{t.take(name + ".weight", {out, d}), Tensor(), t.take(name + ".bias", {out})};
  };
  ClassifierHead& h = m.classifier;
  h.labels = hf.labels;
  const ClassifierNames names = classifier_names(m.config.arch, prefix);
  h.pre = linear(names.pre, d);
  h.out = linear(names.out, n);
  if (m.config.arch == "distilbert") h.activation = ClassifierHead::Activation::relu;
}

// A layer linear, dense (`name`.weight, .bias) or factored (the ABLinear
// layout of a compressed encoder, encoder_names.h), its rank from the tensor.
Linear load_linear(TensorTaker& t, const HfWeights& weights, const std::string& name, int64_t out, int64_t in) {
  const std::string first = factor_first_name(name);
  if (!t.contains(first)) return Linear{t.take(name + ".weight", {out, in}), Tensor(), t.take(name + ".bias", {out})};
  check(!t.contains(name + ".weight"), weights.where(), "linear ", name,
        " is stored both dense (.weight) and factored (.BLinear/.ALinear)");
  const std::vector<int64_t> shape = weights.shape(first);
  check(shape.size() == 2 && shape[0] >= 1, weights.where(), "tensor ", first, " must be [rank, ", in, "]");
  const int64_t rank = shape[0];
  return Linear{t.take(first, {rank, in}), t.take(factor_second_name(name), {out, rank}),
                t.take(factor_bias_name(name), {out})};
}

}  // namespace

std::string encoder_mismatch(const std::string& path) {
  if (!fs::is_directory(path)) return "not a directory";
  try {
    const std::string dir = read_sentence_transformers(path).model_dir;
    return config_json_mismatch(
        dir,
        [](const nlohmann::json& j) {
          return j.contains("model_type") && j["model_type"].is_string() &&
                 is_encoder_model_type(j["model_type"].get<std::string>());
        },
        "config.json's model_type is not an encoder (bert, roberta, distilbert)");
  } catch (const Error& e) {
    return e.what();
  }
}

EncoderModel load_encoder(const std::string& path) {
  const SentenceTransformerSettings st = read_sentence_transformers(path);
  const std::string config_path = (fs::path(st.model_dir) / "config.json").string();
  const EncoderHfConfig hf = parse_encoder_config(read_file(config_path), config_path);
  const HfWeights weights(st.model_dir);
  EncoderModel m;
  m.family = "hf_encoder";
  m.source = path;
  m.config = hf.model;
  const EncoderConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  m.pooling = st.pooling;
  m.normalize = st.normalize;
  m.max_tokens = st.max_seq_length > 0 ? std::min(st.max_seq_length, c.max_tokens()) : c.max_tokens();

  TensorTaker t(
      weights.names(), [&](const std::string& name) { return weights.load_f32(name); }, weights.where());
  const std::string p = find_prefix(t, c.arch, weights.where());
  auto norm = [&](const std::string& name) {
    return LayerNormWeights{t.take(name + ".weight", {d}), t.take(name + ".bias", {d})};
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    return load_linear(t, weights, name, out, in);
  };
  m.word_embed = t.take(p + "embeddings.word_embeddings.weight", {c.vocab, d});
  m.position_embed = t.take(p + "embeddings.position_embeddings.weight", {c.max_positions, d});
  if (c.type_vocab > 0) m.type_embed = t.take(p + "embeddings.token_type_embeddings.weight", {c.type_vocab, d});
  m.embed_norm = norm(p + "embeddings.LayerNorm");
  // Buffers transformers derives from the config.
  t.skip(p + "embeddings.position_ids");
  t.skip(p + "embeddings.token_type_ids");

  const EncoderLayerNames& n = encoder_layer_names(c.arch);
  m.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string at = p + n.layer + std::to_string(i) + ".";
    EncoderLayer& l = m.layers[i];
    l.q = linear(at + n.q, d, d);
    l.k = linear(at + n.k, d, d);
    l.v = linear(at + n.v, d, d);
    l.o = linear(at + n.o, d, d);
    l.attn_norm = norm(at + n.attn_norm);
    l.up = linear(at + n.up, f, d);
    l.down = linear(at + n.down, d, f);
    l.mlp_norm = norm(at + n.mlp_norm);
  }
  if (hf.classifier) load_classifier(m, hf, t, p);
  if (!hf.classifier || c.arch != "bert") {
    // The pooler (BERT's next-sentence head) feeds only BERT's classifier.
    t.skip(p + "pooler.dense.weight");
    t.skip(p + "pooler.dense.bias");
  }
  t.check_all_used();
  m.validate();
  m.pack();
  return m;
}

}  // namespace fsvd
