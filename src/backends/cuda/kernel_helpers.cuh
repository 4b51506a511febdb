#pragma once
// Small device helpers shared by the kernels (reductions: reduce.cuh; async
// copies: cp_async.cuh).

#include <cuda_bf16.h>

#include <cstdint>

namespace fsvd::cuda {

constexpr float kLog2e = 1.4426950408889634f;  // scores in the log2 domain: exp(x) = exp2(x * log2(e))

// Programmatic dependent launch (no-ops when the launch did not ask for it):
// let the next kernel in the stream start its CTAs, and wait until the
// previous kernel has finished and its writes are visible.
__device__ __forceinline__ void allow_next_kernel_to_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ void wait_for_previous_kernel() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// A stored value (bf16 or fp32) as fp32.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// Two floats as bf16x2 (round to nearest even), the first in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// bf16 is the high half of an fp32: element 0 of a word is its low 16 bits.
__device__ __forceinline__ float bf16_lo(unsigned u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(unsigned u) { return __uint_as_float(u & 0xffff0000u); }

}  // namespace fsvd::cuda
