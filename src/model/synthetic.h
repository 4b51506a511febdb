#pragma once
// Random models with the shapes of public architectures, for benchmarks that
// need no weight files (`--synthetic llama-7b --ratio 0.5`). Every value is a
// counter-based hash of (seed, tensor, element), rounded to bf16, so the GPU
// backend can build the same weights in place (a 7B model in well under a
// second) that make_synthetic_model() builds on the host for checks.
// C++17: the value function is also compiled into CUDA kernels.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

#if defined(__CUDACC__)
#define FSVD_HOST_DEVICE __host__ __device__
#else
#define FSVD_HOST_DEVICE
#endif

namespace fsvd {

// Which tensor a value belongs to: one id per (layer, weight, factor).
enum class SyntheticWeight : uint32_t { q, k, v, o, gate, up, down, attn_norm, mlp_norm };

struct SyntheticSpec {
  std::string name;     // what it imitates, e.g. "llama-7b"
  ModelConfig config;
  double keep = 1.0;    // kept parameter ratio of every q/k/v/o/gate/up/down; 1: dense
  uint64_t seed = 0;
  // 0: every matrix at the keep ratio. s in (0, 1): each matrix's rank is
  // scaled by a factor in [1 - s, 1 + s] drawn from (seed, layer, weight):
  // unequal ranks across layers and across q/k/v/o/MLP, as Dobi-SVD and
  // SVD-LLM v2 allocate them, with the same expected size. gate and up share
  // one factor (their second factors stack into one matrix).
  double rank_spread = 0;
  // Rank of `layer`'s linear `w` [out, in] (the SVD-LLM convention
  // r = int(out * in * keep / (out + in)), times the spread factor), or -1
  // when it stays dense.
  int64_t rank(int layer, SyntheticWeight w, int64_t out, int64_t in) const;
};

// Known architecture names (llama-7b, llama-13b, llama-3-8b, ...).
std::vector<std::string> synthetic_names();
// The spec of `name` at `keep` in (0, 1]; throws Error for an unknown name, a
// bad ratio or a spread outside [0, 1).
SyntheticSpec synthetic_spec(const std::string& name, double keep, uint64_t seed = 0, double rank_spread = 0);

struct Model;
// The whole model on the host (fp32 holding the bf16-exact values), packed.
Model make_synthetic_model(const SyntheticSpec& spec);

// Encoders with the shapes of public BERT-family models (bert-base,
// bert-large, minilm-l6), every q/k/v/o/up/down at `keep` by SyntheticSpec's
// rank rule; biases, LayerNorms and embeddings random too. Built on the host,
// packed. Throws Error for an unknown name or a bad ratio.
struct EncoderModel;
std::vector<std::string> synthetic_encoder_names();
EncoderModel make_synthetic_encoder(const std::string& name, double keep, uint64_t seed = 0);

constexpr uint32_t kSyntheticEmbed = 0, kSyntheticLmHead = 2, kSyntheticFinalNorm = 4;
FSVD_HOST_DEVICE constexpr uint32_t synthetic_tensor_id(int layer, SyntheticWeight w, int factor) {
  return 16u + static_cast<uint32_t>(layer) * 32u + static_cast<uint32_t>(w) * 2u + static_cast<uint32_t>(factor);
}

// Element `index` (row-major) of tensor `tensor`: uniform in [-scale, scale),
// rounded to the nearest bf16, so bf16 storage holds it exactly. For norm
// gains `scale` is the spread around 1.
FSVD_HOST_DEVICE inline float synthetic_value(uint64_t seed, uint32_t tensor, uint64_t index, float scale,
                                              bool around_one = false) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t{tensor} << 40) + index;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const float u = static_cast<float>(z >> 40) * (1.0f / 8388608.0f) - 1.0f;  // 24 bits -> [-1, 1)
  float v = u * scale + (around_one ? 1.0f : 0.0f);
  uint32_t bits;
  __builtin_memcpy(&bits, &v, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even bf16 (values are finite)
  bits &= 0xFFFF0000u;
  __builtin_memcpy(&v, &bits, sizeof v);
  return v;
}

// The spread of each factor: weights keep activations O(1) (variance 1/fan-in).
float synthetic_scale(int64_t fan_in);
constexpr float kSyntheticNormSpread = 0.125f;

}  // namespace fsvd
