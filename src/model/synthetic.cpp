#include "model/synthetic.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/encoder.h"
#include "model/model.h"

namespace fsvd {
namespace {

struct Architecture {
  const char* name;
  ModelConfig config;
};

ModelConfig llama_config(int hidden, int intermediate, int layers, int heads, int kv_heads, int vocab,
                         int max_seq, float theta, float eps, bool tied = false) {
  ModelConfig c;
  c.hidden = hidden;
  c.intermediate = intermediate;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.vocab = vocab;
  c.max_seq = max_seq;
  c.rope_theta = theta;
  c.rms_eps = eps;
  c.tied_embeddings = tied;
  return c;
}

const Architecture kArchitectures[] = {
    {"llama-7b", llama_config(4096, 11008, 32, 32, 32, 32000, 4096, 1e4f, 1e-6f)},
    {"llama-13b", llama_config(5120, 13824, 40, 40, 40, 32000, 4096, 1e4f, 1e-6f)},
    {"llama-3-8b", llama_config(4096, 14336, 32, 32, 8, 128256, 8192, 5e5f, 1e-5f)},
    {"smollm2-135m", llama_config(576, 1536, 30, 9, 3, 49152, 8192, 1e5f, 1e-5f, true)},
};

}  // namespace

int64_t SyntheticSpec::rank(int layer, SyntheticWeight w, int64_t out, int64_t in) const {
  if (keep >= 1.0) return -1;
  double factor = 1.0;
  if (rank_spread > 0) {
    // A uniform draw in [-1, 1) from the value hash: up uses gate's.
    const SyntheticWeight key = w == SyntheticWeight::up ? SyntheticWeight::gate : w;
    const double u = synthetic_value(seed, 0xFFFFFFu, static_cast<uint64_t>(layer) * 16 + static_cast<uint32_t>(key),
                                     1.0f);
    factor = 1.0 + rank_spread * u;
  }
  const double r = static_cast<double>(out) * in * keep / (out + in) * factor;
  return std::clamp<int64_t>(static_cast<int64_t>(r), 1, std::min(out, in));
}

std::vector<std::string> synthetic_names() {
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures) names.emplace_back(a.name);
  return names;
}

SyntheticSpec synthetic_spec(const std::string& name, double keep, uint64_t seed, double rank_spread) {
  check(keep > 0 && keep <= 1, "--ratio", "kept parameter ratio must be in (0, 1], got ", keep);
  check(rank_spread >= 0 && rank_spread < 1, "--rank-spread", "must be in [0, 1), got ", rank_spread);
  std::string known;
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return SyntheticSpec{a.name, a.config, keep, seed, rank_spread};
    known += (known.empty() ? "" : ", ") + std::string(a.name);
  }
  fail("--synthetic", "unknown architecture '", name, "' (known: ", known, ")");
}

float synthetic_scale(int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); }

namespace {

Tensor synthetic_tensor(const SyntheticSpec& spec, uint32_t id, std::vector<int64_t> shape,
                        float scale, bool around_one = false) {
  Tensor t(std::move(shape));
  float* p = t.data();
  const int64_t n = t.numel();
  // Threads: `flashsvd convert --synthetic` builds whole 7B models on the host.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = synthetic_value(spec.seed, id, i, scale, around_one);
  return t;
}

Linear synthetic_linear(const SyntheticSpec& spec, int layer, SyntheticWeight w, int64_t out, int64_t in) {
  const int64_t r = spec.rank(layer, w, out, in);
  Linear l;
  if (r < 0) {
    l.first = synthetic_tensor(spec, synthetic_tensor_id(layer, w, 0), {out, in}, synthetic_scale(in));
  } else {
    l.first = synthetic_tensor(spec, synthetic_tensor_id(layer, w, 0), {r, in}, synthetic_scale(in));
    l.second = synthetic_tensor(spec, synthetic_tensor_id(layer, w, 1), {out, r}, synthetic_scale(r));
  }
  return l;
}

}  // namespace

Model make_synthetic_model(const SyntheticSpec& spec) {
  const ModelConfig& c = spec.config;
  Model m;
  m.config = c;
  m.family = "synthetic";
  m.source = "synthetic " + spec.name;
  m.embed = synthetic_tensor(spec, kSyntheticEmbed, {c.vocab, c.hidden}, 1.0f);
  m.final_norm = synthetic_tensor(spec, kSyntheticFinalNorm, {c.hidden}, kSyntheticNormSpread, true);
  m.lm_head.first = c.tied_embeddings
                        ? m.embed
                        : synthetic_tensor(spec, kSyntheticLmHead, {c.vocab, c.hidden}, synthetic_scale(c.hidden));
  const int64_t q_dim = c.q_dim(), kv_dim = c.kv_dim();
  for (int i = 0; i < c.n_layers; ++i) {
    Layer& l = m.layers.emplace_back();
    l.attn_norm = synthetic_tensor(spec, synthetic_tensor_id(i, SyntheticWeight::attn_norm, 0), {c.hidden},
                                   kSyntheticNormSpread, true);
    l.mlp_norm = synthetic_tensor(spec, synthetic_tensor_id(i, SyntheticWeight::mlp_norm, 0), {c.hidden},
                                  kSyntheticNormSpread, true);
    l.q = synthetic_linear(spec, i, SyntheticWeight::q, q_dim, c.hidden);
    l.k = synthetic_linear(spec, i, SyntheticWeight::k, kv_dim, c.hidden);
    l.v = synthetic_linear(spec, i, SyntheticWeight::v, kv_dim, c.hidden);
    l.o = synthetic_linear(spec, i, SyntheticWeight::o, c.hidden, q_dim);
    l.gate = synthetic_linear(spec, i, SyntheticWeight::gate, c.intermediate, c.hidden);
    l.up = synthetic_linear(spec, i, SyntheticWeight::up, c.intermediate, c.hidden);
    l.down = synthetic_linear(spec, i, SyntheticWeight::down, c.hidden, c.intermediate);
  }
  m.validate();
  m.pack();
  return m;
}

namespace {

struct EncoderArchitecture {
  const char* name;
  int hidden, intermediate, layers, heads;
};
const EncoderArchitecture kEncoders[] = {
    {"bert-base", 768, 3072, 12, 12},
    {"bert-large", 1024, 4096, 24, 16},
    {"minilm-l6", 384, 1536, 6, 12},
};
constexpr float kBiasScale = 0.02f;
constexpr uint32_t kBiasId = 1u << 20;  // bias and LayerNorm shift ids: the weight's id plus this
constexpr uint32_t kPositionEmbed = 1, kTypeEmbed = 3, kEmbedNorm = 5;

}  // namespace

std::vector<std::string> synthetic_encoder_names() {
  std::vector<std::string> names;
  for (const EncoderArchitecture& a : kEncoders) names.emplace_back(a.name);
  return names;
}

EncoderModel make_synthetic_encoder(const std::string& name, double keep, uint64_t seed) {
  check(keep > 0 && keep <= 1, "--ratio", "kept parameter ratio must be in (0, 1], got ", keep);
  const EncoderArchitecture* arch = nullptr;
  std::string known;
  for (const EncoderArchitecture& a : kEncoders) {
    if (name == a.name) arch = &a;
    known += (known.empty() ? "" : ", ") + std::string(a.name);
  }
  check(arch != nullptr, "--synthetic", "unknown encoder '", name, "' (known: ", known, ")");
  const SyntheticSpec spec{name, ModelConfig{}, keep, seed, 0};
  EncoderModel m;
  EncoderConfig& c = m.config;
  c.arch = "bert";
  c.hidden = arch->hidden;
  c.intermediate = arch->intermediate;
  c.n_layers = arch->layers;
  c.n_heads = arch->heads;
  c.vocab = 30522;
  c.max_positions = 512;
  c.type_vocab = 2;
  m.family = "synthetic";
  m.source = "synthetic " + name;
  m.max_tokens = c.max_tokens();
  const int64_t d = c.hidden, f = c.intermediate;
  auto norm = [&](uint32_t id) {
    return LayerNormWeights{synthetic_tensor(spec, id, {d}, kSyntheticNormSpread, true),
                            synthetic_tensor(spec, id + kBiasId, {d}, kBiasScale)};
  };
  m.word_embed = synthetic_tensor(spec, kSyntheticEmbed, {c.vocab, d}, 1.0f);
  m.position_embed = synthetic_tensor(spec, kPositionEmbed, {c.max_positions, d}, 1.0f);
  m.type_embed = synthetic_tensor(spec, kTypeEmbed, {c.type_vocab, d}, 1.0f);
  m.embed_norm = norm(kEmbedNorm);
  for (int i = 0; i < c.n_layers; ++i) {
    EncoderLayer& l = m.layers.emplace_back();
    auto linear = [&](SyntheticWeight w, int64_t out, int64_t in) {
      Linear lin = synthetic_linear(spec, i, w, out, in);
      lin.bias = synthetic_tensor(spec, synthetic_tensor_id(i, w, 0) + kBiasId, {out}, kBiasScale);
      return lin;
    };
    l.q = linear(SyntheticWeight::q, d, d);
    l.k = linear(SyntheticWeight::k, d, d);
    l.v = linear(SyntheticWeight::v, d, d);
    l.o = linear(SyntheticWeight::o, d, d);
    l.up = linear(SyntheticWeight::up, f, d);
    l.down = linear(SyntheticWeight::down, d, f);
    l.attn_norm = norm(synthetic_tensor_id(i, SyntheticWeight::attn_norm, 0));
    l.mlp_norm = norm(synthetic_tensor_id(i, SyntheticWeight::mlp_norm, 0));
  }
  m.validate();
  m.pack();
  return m;
}

}  // namespace fsvd
