// See row_ops.h. Memory-bound loops; a grid-stride loop over all elements is
// enough (the prefill's largest, [8192, 11008], is one pass at full bandwidth).
#include "backends/cuda/row_ops.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 8192));
}

// Calls f(r, c) for every element of a rows x cols grid.
template <typename F>
__device__ void for_each_element(int64_t rows, int64_t cols, F f) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols;
    f(r, i - r * cols);
  }
}

__global__ void add_bias_kernel(float* y, int64_t ld, const float* b, int64_t rows, int64_t cols) {
  for_each_element(rows, cols, [&](int64_t r, int64_t c) { y[r * ld + c] += b[c]; });
}

template <typename In, typename Out>
__global__ void silu_mul_kernel(const In* gate, int64_t ld_gate, const In* up, int64_t ld_up, int64_t rows,
                                int64_t cols, Out* out) {
  for_each_element(rows, cols, [&](int64_t r, int64_t c) {
    const float g = to_float(gate[r * ld_gate + c]);
    out[r * cols + c] = Out(g / (1.0f + expf(-g)) * to_float(up[r * ld_up + c]));
  });
}

template <typename In, typename Out>
void launch_silu_mul(const void* gate, int64_t ld_gate, const void* up, int64_t ld_up, int64_t rows, int64_t cols,
                     void* out, cudaStream_t stream) {
  silu_mul_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
      static_cast<const In*>(gate), ld_gate, static_cast<const In*>(up), ld_up, rows, cols, static_cast<Out*>(out));
}

__global__ void store_row_bf16_kernel(const float* x, int64_t cols, const int* d_pos, int max_rows,
                                      __nv_bfloat16* rows, int64_t ld) {
  const int pos = *d_pos;
  if (pos < 0 || pos >= max_rows) return;
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < cols; c += int64_t{gridDim.x} * blockDim.x)
    rows[pos * ld + c] = __float2bfloat16_rn(x[c]);
}

struct StageParams {
  StageSegment seg[kMaxStageSegments];
  int64_t width[kMaxStageSegments];  // cols rounded up to 8: the columns each segment writes
  int count;
};

// One pass over the concatenated padded widths; each element finds its segment.
// __grid_constant__: the segment lookup indexes the parameters at run time,
// which would otherwise copy them to local memory in every thread.
__global__ void stage_bf16_kernel(const float* x, int64_t ldx, int64_t rows, int64_t total,
                                  const __grid_constant__ StageParams p, __nv_bfloat16* y, int64_t ldy) {
  for_each_element(rows, total, [&](int64_t r, int64_t c) {
    int s = 0;
    while (s + 1 < p.count && c >= p.width[s]) c -= p.width[s++];
    const StageSegment& g = p.seg[s];
    y[r * ldy + g.dst_col + c] = c < g.cols ? __float2bfloat16_rn(x[r * ldx + g.src_col + c]) : __float2bfloat16_rn(0.0f);
  });
}

void check_rows(const char* where, const void* p, int64_t ld, int64_t rows, int64_t cols) {
  check(p != nullptr && rows >= 0 && cols >= 0 && ld >= cols, where, "bad matrix: rows ", rows, ", cols ", cols,
        ", ld ", ld);
}

}  // namespace

void add_bias(float* y, int64_t ld, const float* b, int64_t rows, int64_t cols, cudaStream_t stream) {
  check_rows("add_bias", y, ld, rows, cols);
  check(b != nullptr, "add_bias", "null bias");
  if (rows * cols == 0) return;
  add_bias_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, ld, b, rows, cols);
  FSVD_CUDA_CHECK_LAUNCH("add_bias_kernel");
}

void silu_mul(const void* gate, int64_t ld_gate, const void* up, int64_t ld_up, ElementType in_type, int64_t rows,
              int64_t cols, void* out, ElementType out_type, cudaStream_t stream) {
  check_rows("silu_mul", gate, ld_gate, rows, cols);
  check_rows("silu_mul", up, ld_up, rows, cols);
  check(out != nullptr, "silu_mul", "null output");
  if (rows * cols == 0) return;
  using Bf16 = __nv_bfloat16;
  const bool in_f32 = in_type == ElementType::F32, out_f32 = out_type == ElementType::F32;
  (in_f32 ? (out_f32 ? launch_silu_mul<float, float> : launch_silu_mul<float, Bf16>)
          : (out_f32 ? launch_silu_mul<Bf16, float> : launch_silu_mul<Bf16, Bf16>))(gate, ld_gate, up, ld_up,
                                                                                    rows, cols, out, stream);
  FSVD_CUDA_CHECK_LAUNCH("silu_mul_kernel");
}

void store_row_bf16(const float* x, int64_t cols, const int* d_pos, int max_rows, __nv_bfloat16* rows, int64_t ld,
                    cudaStream_t stream) {
  check(x != nullptr && d_pos != nullptr && rows != nullptr && cols >= 1 && ld >= cols && max_rows >= 1,
        "store_row_bf16", "bad arguments: cols ", cols, ", ld ", ld, ", max_rows ", max_rows);
  store_row_bf16_kernel<<<blocks_for(cols), kThreads, 0, stream>>>(x, cols, d_pos, max_rows, rows, ld);
  FSVD_CUDA_CHECK_LAUNCH("store_row_bf16_kernel");
}

void stage_bf16(const float* x, int64_t ldx, int64_t rows, const StageSegment* segments, int count,
                __nv_bfloat16* y, int64_t ldy, cudaStream_t stream) {
  const char* where = "stage_bf16";
  check(count >= 1 && count <= kMaxStageSegments && segments != nullptr, where, count, " segments; 1..",
        kMaxStageSegments, " are supported");
  StageParams p{};
  p.count = count;
  int64_t total = 0;
  for (int i = 0; i < count; ++i) {
    const StageSegment& g = segments[i];
    check(g.cols >= 0 && g.src_col >= 0 && g.dst_col >= 0, where, "segment ", i, " has a negative extent");
    check_rows(where, x, ldx, rows, g.src_col + g.cols);
    check_rows(where, y, ldy, rows, g.dst_col + round_up8(g.cols));
    p.seg[i] = g;
    p.width[i] = round_up8(g.cols);
    total += p.width[i];
  }
  if (rows * total == 0) return;
  stage_bf16_kernel<<<blocks_for(rows * total), kThreads, 0, stream>>>(x, ldx, rows, total, p, y, ldy);
  FSVD_CUDA_CHECK_LAUNCH("stage_bf16_kernel");
}

}  // namespace fsvd::cuda
