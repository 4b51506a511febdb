// See elementwise.h. Vectors of at most a few tens of thousands of values: a
// grid-stride loop is enough.
#include "backends/cuda/elementwise.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 1024)); }

__global__ void add_bias_kernel(float* y, const float* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] += b[i];
}

__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

}  // namespace

void add_bias(float* y, const float* b, int64_t n, cudaStream_t stream) {
  check(y != nullptr && b != nullptr && n >= 0, "add_bias", "null vector or negative length ", n);
  if (n == 0) return;
  add_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, b, n);
  FSVD_CUDA_CHECK_LAUNCH("add_bias_kernel");
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  check(gate != nullptr && up != nullptr && out != nullptr && n >= 0, "silu_mul",
        "null vector or negative length ", n);
  if (n == 0) return;
  silu_mul_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, out, n);
  FSVD_CUDA_CHECK_LAUNCH("silu_mul_kernel");
}

}  // namespace fsvd::cuda
