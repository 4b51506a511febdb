#pragma once
// Small random models for tests: any config, dense or low-rank projections
// (unequal ranks allowed), first factors shared between layers as Basis
// Sharing does, q/k/v biases, tied or untied (optionally low-rank) lm_head.
#include <cstdint>
#include <vector>

#include "model/model.h"

namespace fsvd::testing {

// Rank of each projection; 0 keeps it dense.
struct Ranks {
  int q = 0, k = 0, v = 0, o = 0, gate = 0, up = 0, down = 0;
};

struct RandomModelSpec {
  ModelConfig config;  // config.tied_embeddings makes lm_head share embed's storage
  Ranks ranks;
  // One Ranks per layer, replacing `ranks` when given: the per-layer mixes of
  // dense and low-rank parts a budgeted compression makes. No sharing with it.
  std::vector<Ranks> layer_ranks;
  int lm_head_rank = 0;  // untied lm_head only
  bool qkv_bias = false;
  // Consecutive layers per group whose low-rank q, k, v, gate and up share one
  // first factor (the same storage); o and down stay private. 1 = no sharing.
  int share_group = 1;
  bool pack = true;  // run Model::pack() before returning
  uint64_t seed = 1;
};

// Weights are Gaussian scaled by 1/sqrt(fan-in) so activations stay O(1);
// norm weights are 1 + small noise. The result passes Model::validate().
Model random_model(const RandomModelSpec& spec);

// n Gaussian values with a fixed seed, for op-level tests.
std::vector<float> random_normal(size_t n, uint64_t seed, float stddev = 1.0f);

// A config with the usual defaults filled in (rope_theta 10000, eps 1e-5).
ModelConfig small_config(int hidden, int intermediate, int n_layers, int n_heads, int n_kv_heads,
                         int head_dim, int vocab, int max_seq = 64);

}  // namespace fsvd::testing
