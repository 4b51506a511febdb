#include "testing/random_encoder.h"

#include <cmath>

#include "testing/random_model.h"

namespace fsvd::testing {

namespace {

Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed, float stddev, float offset = 0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v = random_normal(static_cast<size_t>(n), seed, stddev);
  for (float& x : v) x += offset;
  return Tensor(std::move(shape), std::move(v));
}

Linear random_linear(int64_t out, int64_t in, uint64_t seed, bool chain) {
  Linear l{random_tensor({out, in}, seed, 1.0f / std::sqrt(static_cast<float>(in))), Tensor(),
           random_tensor({out}, seed + 1, 0.1f)};
  if (chain) {
    std::vector<float> eye(out * out, 0.0f);
    for (int64_t i = 0; i < out; ++i) eye[i * out + i] = 1.0f;
    l.second = Tensor({out, out}, std::move(eye));
  }
  return l;
}

}  // namespace

EncoderConfig small_encoder_config() {
  EncoderConfig c;
  c.arch = "bert";
  c.hidden = 16;
  c.intermediate = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.vocab = 50;
  c.max_positions = 24;
  c.type_vocab = 2;
  return c;
}

EncoderModel random_encoder(const EncoderConfig& c, uint64_t seed, int labels, bool chains) {
  EncoderModel m;
  m.config = c;
  m.family = "test";
  m.source = "random_encoder";
  m.max_tokens = c.max_tokens();
  const int64_t d = c.hidden, f = c.intermediate;
  uint64_t s = seed * 1000;
  auto norm = [&] { return LayerNormWeights{random_tensor({d}, ++s, 0.1f, 1.0f), random_tensor({d}, ++s, 0.1f)}; };
  m.word_embed = random_tensor({c.vocab, d}, ++s, 1.0f);
  m.position_embed = random_tensor({c.max_positions, d}, ++s, 0.5f);
  if (c.type_vocab > 0) m.type_embed = random_tensor({c.type_vocab, d}, ++s, 0.5f);
  m.embed_norm = norm();
  m.layers.resize(c.n_layers);
  for (EncoderLayer& l : m.layers) {
    l.q = random_linear(d, d, s += 2, chains);
    l.k = random_linear(d, d, s += 2, chains);
    l.v = random_linear(d, d, s += 2, chains);
    l.o = random_linear(d, d, s += 2, chains);
    l.up = random_linear(f, d, s += 2, chains);
    l.down = random_linear(d, f, s += 2, chains);
    l.attn_norm = norm();
    l.mlp_norm = norm();
  }
  if (labels > 0) {
    m.classifier.pre = random_linear(d, d, s += 2, false);
    m.classifier.out = random_linear(labels, d, s += 2, false);
    for (int i = 0; i < labels; ++i) m.classifier.labels.push_back("label" + std::to_string(i));
  }
  m.validate();
  m.pack();
  return m;
}

}  // namespace fsvd::testing
