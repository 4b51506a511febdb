#pragma once
// Y[n, N] = X[n, K] · Wᵀ for the few rows of a decode step (1 <= n <=
// kSkinnyAnyRows, or up to kSkinnyMaxRows for a first factor's shape): bf16
// W and X, fp32 accumulation on tensor cores, fp32 or bf16 output, stored or
// added to Y. Weight-bandwidth-bound by design: each CTA streams its tile of
// W through a ring of shared-memory stages whose first loads are issued
// before the previous kernel has finished (programmatic dependent launch),
// and K is split over a thread-block cluster reduced through distributed
// shared memory (no workspace; a row's result does not depend on the other
// rows). Gemm::run takes it for the shapes it supports (gemm.h); the layout
// is in skinny_gemm.cu.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

constexpr int64_t kSkinnyAnyRows = 8;   // any product
constexpr int64_t kSkinnyMaxRows = 32;  // products with K >= N and under kSkinnyMaxWeights weights
constexpr int64_t kSkinnyMaxWeights = int64_t{1} << 24;

// What a decode step's product folds in (skinny_gemm.cu says how).
// An RMSNorm folded into the products around it (decode steps of up to
// kSkinnyAnyRows rows). The product that adds to the residual x (fp32 Y,
// accumulate) also writes gained = bf16(x · gain) (row stride gained_ld) and
// sums_out: x's sums of squares, one per kNormSumCols columns of a row,
// [ceil(N / kNormSumCols)][8] (row fastest). The product that reads the norm
// takes gained as X and those sums as sums_in (K = the residual's width, at
// most kMaxNormWidth): Y row r is scaled by 1 / sqrt(mean(x[r]²) + eps), as
// rmsnorm() would have scaled its input.
// SiLU·up on the input (silu_up; up to kSkinnyAnyRows rows): X holds the
// MLP's gate rows and silu_up its up rows (X's row stride); the product
// multiplies bf16(silu(gate) · up), silu with the fast exp and division
// (within a few ulps of silu_mul()'s before the rounding).
constexpr int64_t kNormSumCols = 64;
constexpr int64_t kMaxNormWidth = 8192;
inline int64_t norm_sums_floats(int64_t width) { return (width + kNormSumCols - 1) / kNormSumCols * 8; }
struct Fold {
  const float* sums_in = nullptr;
  float eps = 0;
  __nv_bfloat16* gained = nullptr;
  int64_t gained_ld = 0;
  const float* gain = nullptr;
  float* sums_out = nullptr;
  const __nv_bfloat16* silu_up = nullptr;
};

// `batch` products in one launch: product i on W's rows [i N, (i + 1) N)
// (w.rows = N), x + i x_step and y + i y_step (steps in elements).
struct SkinnyGemm {
  DeviceMatrix w;
  const void* x = nullptr;
  int64_t ldx = 0;
  void* y = nullptr;
  int64_t ldy = 0;
  ElementType y_type = ElementType::F32;
  bool accumulate = false;
  int batch = 1;
  int64_t x_step = 0, y_step = 0;
  Fold fold;
};

// Whether skinny_gemm takes the product over n rows: bf16 W, 1 <= n <=
// kSkinnyAnyRows (or kSkinnyMaxRows when W has at least as many columns as
// rows and fewer than kSkinnyMaxWeights elements), W and X (and silu_up)
// 16-byte aligned with row strides (and x_step) of a multiple of 8 elements;
// folds in a single product (batch 1) of up to kSkinnyAnyRows rows, SiLU·up
// not with a norm's reading.
bool skinny_gemm_supports(const SkinnyGemm& g, int64_t n);

// Enqueues the product on `stream` (capturable into CUDA graphs); throws
// fsvd::Error for what skinny_gemm_supports refuses.
void skinny_gemm(const SkinnyGemm& g, int64_t n, cudaStream_t stream);

}  // namespace fsvd::cuda
