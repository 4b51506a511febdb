#pragma once
// The loop shape of the memory-bound row kernels (elementwise.cu, kv_store.cu):
// each thread takes runs of 8 consecutive columns of a row (a 16-byte load of
// bf16, two of fp32, where the run is whole and aligned), grid.y walks the
// rows, so no thread divides a flat index. (A flat grid-stride loop, one
// 64-bit division and 2-byte loads per element, took several times its
// bytes' time: bench/kernels/prefill_attention_notes.md.)
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/device_matrix.h"
#include "backends/cuda/kernel_helpers.cuh"

namespace fsvd::cuda::row_runs {

constexpr int kThreads = 256;
constexpr int kRun = 8;  // consecutive columns per thread

// Runs of kRun columns over grid.x, rows over grid.y (strided past 65535).
inline dim3 grid_for(int64_t rows, int64_t cols) {
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

}  // namespace fsvd::cuda::row_runs
