#pragma once
// Factor-chain linears on the CPU through OpenBLAS: Y[n, out] = X[n, in]·firstᵀ,
// then ·secondᵀ when low-rank, + bias. GEMV when n == 1, GEMM otherwise.
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "model/linear.h"

namespace fsvd::cpu {

// Y[n, rows(w)] (row stride ldy) = beta * Y + X[n, cols(w)] (row stride ldx) · wᵀ,
// w row-major and contiguous. beta is 0 (overwrite) or 1 (accumulate).
void matmul_nt(const float* x, int64_t ldx, int64_t n, const Tensor& w, float* y, int64_t ldy,
               float beta);

// Y[n, l.out()] (row stride ldy) = l(X[n, l.in()]), added to Y when `accumulate`
// (a residual connection). `scratch` holds the rank-space intermediate.
void apply_linear(const Linear& l, const float* x, int64_t n, float* y, int64_t ldy,
                  bool accumulate, std::vector<float>& scratch);

// Destination of one part of a packed linear.
struct OutSlot {
  float* data;
  int64_t ld;  // row stride
};

// One GEMM over the packed first factor, then each part's second factor on its
// slice of the intermediate (a dense part's slice is its output) plus its bias,
// written to outs[i] as [n, out_i]. `scratch` holds the packed intermediate.
void apply_packed(const PackedLinear& p, const float* x, int64_t n, std::span<const OutSlot> outs,
                  std::vector<float>& scratch);

}  // namespace fsvd::cpu
