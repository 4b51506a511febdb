#pragma once
// The element-wise steps of the decode path that no GEMV epilogue covers yet:
// the q/k/v bias add and SiLU(gate)·up when gate and up cannot share one
// gemv_silu_mul launch (dense parts, unequal ranks).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fsvd::cuda {

// y[i] += b[i] for i < n. One launch.
void add_bias(float* y, const float* b, int64_t n, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i] for i < n (out may alias gate or up), the
// arithmetic of cpu::silu_mul. One launch.
void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

}  // namespace fsvd::cuda
