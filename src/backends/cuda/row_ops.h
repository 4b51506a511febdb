#pragma once
// Element-wise steps around the GEMVs and GEMMs, over `rows` rows: one row in
// the decode step, the prompt's tokens in prefill. Matrices are row-major with
// explicit row strides (ld, in elements) so slices of a packed output can be
// read in place.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// y[r][c] += b[c]: the q/k/v bias add. One launch.
void add_bias(float* y, int64_t ld, const float* b, int64_t rows, int64_t cols, cudaStream_t stream);

// out[r][c] = silu(gate[r][c]) * up[r][c], the arithmetic of cpu::silu_mul in
// fp32; gate and up hold `in_type` values (bf16 from prefill's bf16 GEMM
// outputs); out is contiguous [rows, cols] of `out_type` (fp32 out may alias
// fp32 gate or up when their ld is cols). One launch.
void silu_mul(const void* gate, int64_t ld_gate, const void* up, int64_t ld_up, ElementType in_type, int64_t rows,
              int64_t cols, void* out, ElementType out_type, cudaStream_t stream);

// y = x rounded to bf16 (round to nearest even), both [rows, cols] with their
// own row strides: the input of a bf16 GEMM. One launch.
void to_bf16(const float* x, int64_t ldx, int64_t rows, int64_t cols, __nv_bfloat16* y, int64_t ldy,
             cudaStream_t stream);

}  // namespace fsvd::cuda
