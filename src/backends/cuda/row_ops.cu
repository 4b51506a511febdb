// See row_ops.h. Memory-bound loops: each thread takes runs of 8 consecutive
// columns of a row (a 16-byte load of bf16, two of fp32, where the run is
// whole and aligned), grid.y walks the rows, so no thread divides a flat index.
// (A flat grid-stride loop, one 64-bit division and 2-byte loads per element,
// took 3x its bytes' time on prefill's [4096, 11008] bf16 SiLU·up on H200.)
#include "backends/cuda/row_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRun = 8;  // consecutive columns per thread

// Runs of kRun columns over grid.x, rows over grid.y (strided past 65535).
dim3 grid_for(int64_t rows, int64_t cols) {
  const int64_t blocks = ceil_div(ceil_div(cols, kRun), kThreads);
  return dim3(static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65535)),
              static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535)));
}

// Calls f(r, c0, n) for every run of n <= kRun columns [c0, c0 + n) of every row.
template <typename F>
__device__ void for_each_run(int64_t rows, int64_t cols, F f) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (int64_t c0 = kRun * (blockIdx.x * int64_t{blockDim.x} + threadIdx.x); c0 < cols;
         c0 += kRun * int64_t{gridDim.x} * blockDim.x)
      f(r, c0, static_cast<int>(min(int64_t{kRun}, cols - c0)));
}

__device__ __forceinline__ bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// f[i] = p[i] as fp32 for i < n, 0 past n (T: float or __nv_bfloat16).
template <typename T>
__device__ __forceinline__ void load_run(const T* p, int n, float* f) {
  if (n == kRun && aligned16(p)) {
    if constexpr (sizeof(T) == 2) {
      const uint4 w = *reinterpret_cast<const uint4*>(p);
      const uint32_t word[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) f[2 * i] = bf16_lo(word[i]), f[2 * i + 1] = bf16_hi(word[i]);
    } else {
      const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
      f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kRun; ++i) f[i] = i < n ? to_float(p[i]) : 0.0f;
}

// p[i] = f[i] for i < n, rounded to T (bf16: nearest even).
template <typename T>
__device__ __forceinline__ void store_run(T* p, int n, const float* f) {
  if (n == kRun && aligned16(p)) {
    if constexpr (sizeof(T) == 2) {
      *reinterpret_cast<uint4*>(p) =
          make_uint4(pack_bf16(f[0], f[1]), pack_bf16(f[2], f[3]), pack_bf16(f[4], f[5]), pack_bf16(f[6], f[7]));
    } else {
      reinterpret_cast<float4*>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
      reinterpret_cast<float4*>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kRun; ++i)
    if (i < n) p[i] = T(f[i]);
}

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
  for_each_run(rows, cols, [&](int64_t r, int64_t c0, int n) {
    float g[kRun], u[kRun];
    load_run(gate + r * ld_gate + c0, n, g);
    load_run(up + r * ld_up + c0, n, u);
#pragma unroll
    for (int i = 0; i < kRun; ++i) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    store_run(out + r * cols + c0, n, g);
  });
}

template <typename In, typename Out>
void launch_silu_mul(const void* gate, int64_t ld_gate, const void* up, int64_t ld_up, int64_t rows, int64_t cols,
                     void* out, cudaStream_t stream) {
  silu_mul_kernel<<<grid_for(rows, cols), kThreads, 0, stream>>>(
      static_cast<const In*>(gate), ld_gate, static_cast<const In*>(up), ld_up, rows, cols, static_cast<Out*>(out));
}

__global__ void store_row_bf16_kernel(const float* x, int64_t cols, const int* d_pos, int max_rows,
                                      __nv_bfloat16* rows, int64_t ld) {
  const int pos = *d_pos;
  if (pos < 0 || pos >= max_rows) return;
  for_each_run(1, cols, [&](int64_t, int64_t c0, int n) {
    float v[kRun];
    load_run(x + c0, n, v);
    store_run(rows + pos * ld + c0, n, v);
  });
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

void store_row_bf16(const float* x, int64_t cols, const int* d_pos, int max_rows, __nv_bfloat16* rows, int64_t ld,
                    cudaStream_t stream) {
  check(x != nullptr && d_pos != nullptr && rows != nullptr && cols >= 1 && ld >= cols && max_rows >= 1,
        "store_row_bf16", "bad arguments: cols ", cols, ", ld ", ld, ", max_rows ", max_rows);
  store_row_bf16_kernel<<<grid_for(1, cols), kThreads, 0, stream>>>(x, cols, d_pos, max_rows, rows, ld);
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
  stage_bf16_kernel<<<grid_for(rows, total), kThreads, 0, stream>>>(x, ldx, rows, total, p, y, ldy);
  FSVD_CUDA_CHECK_LAUNCH("stage_bf16_kernel");
}

}  // namespace fsvd::cuda
