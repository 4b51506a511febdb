#pragma once
// What the GEMV benches share: reproducible device-side fill values, the
// median time of one call replayed inside a CUDA graph (no launch gaps), and
// the relative difference of two results.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"

namespace fsvd::bench {

// Uniform values in [-1, 1) from a hash of the index: fast, reproducible, never zero-filled.
__device__ inline float hashed_uniform(uint64_t i, uint64_t seed) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;
}

// Median microseconds per enqueue(i) call over `repeats` replays of a graph
// of `launches` calls.
inline double time_per_call(cudaStream_t stream, int launches, int repeats,
                            const std::function<void(int)>& enqueue) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; ++i) enqueue(i);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int warm = 0; warm < 2; ++warm) FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r)
    us.push_back(1000.0 * cuda::elapsed_ms(stream, [&] { FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }) /
                 launches);
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

// ||a - b|| / ||b||; infinite when either holds a non-finite value.
inline double relative_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    num += double(a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace fsvd::bench
