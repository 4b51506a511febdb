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

// out[r][c] = silu(gate[r][c]) * up[r][c], cpu::silu_mul's formula in fp32
// with the fast exp and division (kernel_helpers.cuh's fast_silu); gate and
// up hold `in_type` values (bf16 from prefill's bf16 GEMM outputs); out is
// contiguous [rows, cols] of `out_type` (fp32 out may alias fp32 gate or up
// when their ld is cols). One launch.
void silu_mul(const void* gate, int64_t ld_gate, const void* up, int64_t ld_up, ElementType in_type, int64_t rows,
              int64_t cols, void* out, ElementType out_type, cudaStream_t stream);

// Column blocks of fp32 rows rounded to bf16 (nearest even) for a bf16 GEMM:
// for each segment, x columns [src_col, src_col + cols) go to y columns
// [dst_col, dst_col + cols), and y columns up to the next multiple of 8 are
// zeroed (the padding a GEMM with K rounded up to 8 reads). Up to
// kMaxStageSegments segments of `rows` rows, one launch.
struct StageSegment {
  int64_t src_col = 0, cols = 0, dst_col = 0;
};
constexpr int kMaxStageSegments = 3;
void stage_bf16(const float* x, int64_t ldx, int64_t rows, const StageSegment* segments, int count,
                __nv_bfloat16* y, int64_t ldy, cudaStream_t stream);

}  // namespace fsvd::cuda
