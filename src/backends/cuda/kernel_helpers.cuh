#pragma once
// Small device helpers shared by the kernels (reductions: reduce.cuh; async
// copies: cp_async.cuh).

#include <cuda_bf16.h>
#include <cuda_fp8.h>

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

// An L2 eviction policy for data read once per step (a product's weights, the
// KV cache's rows): marked first to leave L2, so it does not push out what is
// read again (activations, partial sums, the next kernel's inputs).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// 2^x in one MUFU op (ex2(-inf) = 0): the attention kernels' softmax.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// A stored value (bf16 or fp32) as fp32.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// silu(gate) = gate · sigmoid(gate) with the fast exp and division (a few
// ulps from expf and IEEE division): the precise sequences spilled the GEMV
// and slowed skinny_gemm's folded input and silu_mul's kernel by far more
// than their instruction count (bench/results/2026-12-03-session26).
__device__ __forceinline__ float fast_silu(float gate) { return __fdividef(gate, 1.0f + __expf(-gate)); }

// Two floats as bf16x2 (round to nearest even), the first in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// bf16 is the high half of an fp32: element 0 of a word is its low 16 bits.
__device__ __forceinline__ float bf16_lo(unsigned u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(unsigned u) { return __uint_as_float(u & 0xffff0000u); }

// fp8 e4m3, the fp8 KV cache's element (device_matrix.h): round to nearest
// even, saturated to ±448 (core/dtype.h's f32_to_e4m3 is the CPU's twin).
__device__ __forceinline__ float round_e4m3(float x) {
  const __nv_fp8_storage_t b = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3)));
}
// Four floats as e4m3 in a word, the first in the low byte.
__device__ __forceinline__ uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | hi << 16;
}
// The four e4m3 of a word (the low byte first) as floats (e4m3 -> fp16 is exact).
__device__ __forceinline__ void unpack_e4m3x4(uint32_t w, float* f) {
  const float2 lo = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(w & 0xffffu, __NV_E4M3)));
  const float2 hi = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(w >> 16, __NV_E4M3)));
  f[0] = lo.x, f[1] = lo.y, f[2] = hi.x, f[3] = hi.y;
}

}  // namespace fsvd::cuda
