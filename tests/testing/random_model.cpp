#include "testing/random_model.h"

#include <cmath>
#include <random>

#include "core/error.h"

namespace fsvd::testing {

namespace {

class Filler {
 public:
  explicit Filler(uint64_t seed) : rng_(seed) {}
  Tensor normal(std::vector<int64_t> shape, float stddev, float mean = 0.0f) {
    Tensor t(std::move(shape));
    std::normal_distribution<float> dist(mean, stddev);
    float* p = t.data();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng_);
    return t;
  }
  // First factor [rows, in] of a linear reading `in` inputs.
  Tensor first(int64_t rows, int64_t in) { return normal({rows, in}, 1.0f / std::sqrt(float(in))); }

 private:
  std::mt19937_64 rng_;
};

// A linear [out, in]: dense when rank == 0, else first [rank, in] (taken from
// `shared_first` when given) and second [out, rank].
Linear make_linear(Filler& f, int64_t out, int64_t in, int rank, const Tensor* shared_first) {
  Linear l;
  if (rank == 0) {
    l.first = f.first(out, in);
  } else {
    l.first = shared_first ? *shared_first : f.first(rank, in);
    l.second = f.first(out, rank);
  }
  return l;
}

}  // namespace

std::vector<float> random_normal(size_t n, uint64_t seed, float stddev) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

ModelConfig small_config(int hidden, int intermediate, int n_layers, int n_heads, int n_kv_heads,
                         int head_dim, int vocab, int max_seq) {
  ModelConfig c;
  c.hidden = hidden;
  c.intermediate = intermediate;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = head_dim;
  c.vocab = vocab;
  c.max_seq = max_seq;
  return c;
}

Model random_model(const RandomModelSpec& spec) {
  const ModelConfig& c = spec.config;
  Filler f(spec.seed);
  Model m;
  m.config = c;
  m.family = "random";
  m.source = "random_model";
  m.embed = f.normal({c.vocab, c.hidden}, 1.0f);
  m.final_norm = f.normal({c.hidden}, 0.1f, 1.0f);
  if (c.tied_embeddings) {
    m.lm_head.first = m.embed;
  } else {
    m.lm_head = make_linear(f, c.vocab, c.hidden, spec.lm_head_rank, nullptr);
  }

  const int64_t q_out = int64_t{c.n_heads} * c.head_dim, kv_out = int64_t{c.n_kv_heads} * c.head_dim;
  check(spec.layer_ranks.empty() ||
            (static_cast<int>(spec.layer_ranks.size()) == c.n_layers && spec.share_group <= 1),
        "random_model", "layer_ranks needs one Ranks per layer and no sharing");
  // Shared first factors of the current group: q, k, v, gate, up.
  Tensor group_first[5];
  for (int i = 0; i < c.n_layers; ++i) {
    const bool group_start = i % spec.share_group == 0;
    auto shared = [&](int slot, int64_t rank, int64_t in) -> const Tensor* {
      if (spec.share_group <= 1 || rank == 0) return nullptr;
      if (group_start) group_first[slot] = f.first(rank, in);
      return &group_first[slot];
    };
    const Ranks& r = spec.layer_ranks.empty() ? spec.ranks : spec.layer_ranks[i];
    Layer l;
    l.attn_norm = f.normal({c.hidden}, 0.1f, 1.0f);
    l.mlp_norm = f.normal({c.hidden}, 0.1f, 1.0f);
    l.q = make_linear(f, q_out, c.hidden, r.q, shared(0, r.q, c.hidden));
    l.k = make_linear(f, kv_out, c.hidden, r.k, shared(1, r.k, c.hidden));
    l.v = make_linear(f, kv_out, c.hidden, r.v, shared(2, r.v, c.hidden));
    l.o = make_linear(f, c.hidden, q_out, r.o, nullptr);
    l.gate = make_linear(f, c.intermediate, c.hidden, r.gate, shared(3, r.gate, c.hidden));
    l.up = make_linear(f, c.intermediate, c.hidden, r.up, shared(4, r.up, c.hidden));
    l.down = make_linear(f, c.hidden, c.intermediate, r.down, nullptr);
    if (spec.qkv_bias) {
      l.q.bias = f.normal({q_out}, 0.5f);
      l.k.bias = f.normal({kv_out}, 0.5f);
      l.v.bias = f.normal({kv_out}, 0.5f);
    }
    m.layers.push_back(std::move(l));
  }
  m.validate();
  if (spec.pack) m.pack();
  return m;
}

}  // namespace fsvd::testing
