// Bias add, SiLU·up and bf16 staging (see elementwise.h), in the loop shape
// of row_runs.cuh.
#include "backends/cuda/elementwise.h"

#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/row_runs.cuh"

namespace fsvd::cuda {
namespace {

using namespace row_runs;

__global__ void add_bias_kernel(float* y, int64_t ld, const float* b, int64_t rows, int64_t cols) {
  for_each_run(rows, cols, [&](int64_t r, int64_t c0, int n) {
    float v[kRun], bias[kRun];
    load_run(y + r * ld + c0, n, v);
    load_run(b + c0, n, bias);
#pragma unroll
    for (int i = 0; i < kRun; ++i) v[i] += bias[i];
    store_run(y + r * ld + c0, n, v);
  });
}

template <typename In, typename Out>
__global__ void silu_mul_kernel(const In* gate, int64_t ld_gate, const In* up, int64_t ld_up, int64_t rows,
                                int64_t cols, Out* out) {
  allow_next_kernel_to_launch();  // a dependent launch (dependent_launch.h)
  wait_for_previous_kernel();
  for_each_run(rows, cols, [&](int64_t r, int64_t c0, int n) {
    float g[kRun], u[kRun];
    load_run(gate + r * ld_gate + c0, n, g);
    load_run(up + r * ld_up + c0, n, u);
#pragma unroll
    for (int i = 0; i < kRun; ++i) g[i] = fast_silu(g[i]) * u[i];
    store_run(out + r * cols + c0, n, g);
  });
}

template <typename In, typename Out>
void launch_silu_mul(const void* gate, int64_t ld_gate, const void* up, int64_t ld_up, int64_t rows, int64_t cols,
                     void* out, cudaStream_t stream) {
  launch_dependent(silu_mul_kernel<In, Out>, grid_for(rows, cols), kThreads, 0, stream, static_cast<const In*>(gate),
                   ld_gate, static_cast<const In*>(up), ld_up, rows, cols, static_cast<Out*>(out));
}

struct StageParams {
  StageSegment seg[kMaxStageSegments];
  int64_t width[kMaxStageSegments];  // cols rounded up to 8: the columns each segment writes
  int count;
};

// One pass over the concatenated padded widths (multiples of kRun, so a run
// never straddles two segments); each run finds its segment.
// __grid_constant__: the segment lookup indexes the parameters at run time,
// which would otherwise copy them to local memory in every thread.
__global__ void stage_bf16_kernel(const float* x, int64_t ldx, int64_t rows, int64_t total,
                                  const __grid_constant__ StageParams p, __nv_bfloat16* y, int64_t ldy) {
  for_each_run(rows, total, [&](int64_t r, int64_t c, int n) {
    int s = 0;
    while (s + 1 < p.count && c >= p.width[s]) c -= p.width[s++];
    const StageSegment& g = p.seg[s];
    float v[kRun];
    load_run(x + r * ldx + g.src_col + c, static_cast<int>(max(int64_t{0}, min(g.cols - c, int64_t{n}))), v);
    store_run(y + r * ldy + g.dst_col + c, n, v);
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
  add_bias_kernel<<<grid_for(rows, cols), kThreads, 0, stream>>>(y, ld, b, rows, cols);
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
  stage_bf16_kernel<<<grid_for(rows, total), kThreads, 0, stream>>>(x, ldx, rows, total, p, y, ldy);
  FSVD_CUDA_CHECK_LAUNCH("stage_bf16_kernel");
}

}  // namespace fsvd::cuda
