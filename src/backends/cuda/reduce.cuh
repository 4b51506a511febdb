#pragma once
// Warp and CTA reductions shared by the kernels: sums, maxima, and the
// argmax's (value, index) maximum.
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

namespace fsvd::cuda {

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the CTA of `warps` warps, the same value in every thread;
// `scratch` holds one T per warp.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* scratch, int warps) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  T total = 0;
  for (int i = 0; i < warps; ++i) total += scratch[i];
  return total;
}

// Maximum over the CTA of `warps` warps, the same value in every thread;
// `scratch` holds one float per warp.
__device__ __forceinline__ float block_max(float v, float* scratch, int warps) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float m = scratch[0];
  for (int i = 1; i < warps; ++i) m = fmaxf(m, scratch[i]);
  return m;
}

struct Best {
  float v;
  int i;
};
// Larger value wins, the lower index on ties; NaN never compares better.
__device__ __forceinline__ Best better(Best a, Best b) {
  return b.v > a.v || (b.v == a.v && b.i < a.i) ? b : a;
}

__device__ __forceinline__ Best warp_best(Best b) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2)
    b = better(b, {__shfl_xor_sync(0xffffffffu, b.v, off), __shfl_xor_sync(0xffffffffu, b.i, off)});
  return b;
}

// This thread's best of v[0, n) (v[i] has index first + i) in a CTA of
// kThreads threads, for block_best to combine: 16-byte loads over the aligned
// bulk, scalar loads before and after it, so a row may start anywhere.
template <int kThreads>
__device__ __forceinline__ Best range_best(const float* v, int n, int first) {
  static_assert(kThreads >= 3, "one thread a value before and after the bulk");
  Best best{-INFINITY, INT_MAX};
  const int t = threadIdx.x;
  const int head = min(n, static_cast<int>((16 - reinterpret_cast<uintptr_t>(v) % 16) % 16 / 4));
  const int groups = (n - head) / 4;
  const float4* bulk = reinterpret_cast<const float4*>(v + head);
  for (int g = t; g < groups; g += kThreads) {
    const float4 q = bulk[g];
    const int i = first + head + 4 * g;
    best = better(best, {q.x, i});
    best = better(best, {q.y, i + 1});
    best = better(best, {q.z, i + 2});
    best = better(best, {q.w, i + 3});
  }
  const int tail = head + 4 * groups;  // fewer than 4 values on either side of the bulk
  if (t < head) best = better(best, {v[t], first + t});
  if (tail + t < n) best = better(best, {v[tail + t], first + tail + t});
  return best;
}

// The best of a CTA of kWarps warps, valid in thread 0; `scratch` holds kWarps.
template <int kWarps>
__device__ Best block_best(Best b, Best* scratch) {
  b = warp_best(b);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = b;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < kWarps; ++w) b = better(b, scratch[w]);
  return b;
}

}  // namespace fsvd::cuda
