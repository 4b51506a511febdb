#pragma once
// How the next token is chosen: shared by the host sampler (runtime/sampler.h)
// and the GPU one (backends/cuda/sampling.h). C++17 (CUDA sources include it).
#include <cstdint>

namespace fsvd {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  uint64_t seed = 0;
};

// Field by field: the struct has padding bytes, which a byte comparison
// would read. Written out rather than defaulted: CUDA sources (C++17) include it.
inline bool operator==(const SamplingParams& a, const SamplingParams& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p && a.seed == b.seed;
}
inline bool operator!=(const SamplingParams& a, const SamplingParams& b) { return !(a == b); }

// Throws Error for a negative or non-finite temperature, negative top_k, or
// top_p outside (0, 1].
void check_sampling_params(const SamplingParams& params);

}  // namespace fsvd
