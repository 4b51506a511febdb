// RMSNorm (see norm.h).
#include "backends/cuda/norm.h"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/reduce.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;

// Four values of a row as stored in T at p (16-byte aligned for fp32, 8 for bf16).
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16(v.x, v.y), pack_bf16(v.z, v.w));
}

// One CTA per row; rows whose width is a multiple of 4 (and aligned: all of
// prefill's) move in 16-byte loads, faster than the scalar loads the others
// take (bench/kernels/prefill_attention_notes.md).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* x, const float* w, int64_t dim, float eps, T* out) {
  __shared__ double partial[kThreads / 32];
  allow_next_kernel_to_launch();  // a dependent launch (dependent_launch.h)
  wait_for_previous_kernel();
  const float* xr = x + blockIdx.x * dim;
  T* yr = out + blockIdx.x * dim;
  const bool vec = dim % 4 == 0 && reinterpret_cast<uintptr_t>(xr) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(w) % 16 == 0 && reinterpret_cast<uintptr_t>(yr) % (4 * sizeof(T)) == 0;
  const auto* x4 = reinterpret_cast<const float4*>(xr);
  const auto* w4 = reinterpret_cast<const float4*>(w);
  double ss = 0;
  if (vec) {
    for (int64_t i = threadIdx.x; i < dim / 4; i += kThreads) {
      const float4 v = x4[i];
      ss += double{v.x} * v.x + double{v.y} * v.y + double{v.z} * v.z + double{v.w} * v.w;
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) ss += static_cast<double>(xr[i]) * xr[i];
  }
  const double total = block_sum(ss, partial, kThreads / 32);
  const float inv = 1.0f / sqrtf(static_cast<float>(total / static_cast<double>(dim)) + eps);
  if (vec) {
    for (int64_t i = threadIdx.x; i < dim / 4; i += kThreads) {
      const float4 v = x4[i], g = w4[i];
      store4(yr + 4 * i, make_float4(g.x * (v.x * inv), g.y * (v.y * inv), g.z * (v.z * inv), g.w * (v.w * inv)));
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) yr[i] = T(w[i] * (xr[i] * inv));
  }
}

}  // namespace

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, void* out, ElementType out_type,
             cudaStream_t stream) {
  const char* where = "cuda::rmsnorm";
  check(x != nullptr && w != nullptr && out != nullptr, where, "null argument");
  check(n >= 1 && n <= INT32_MAX && dim >= 1, where, "shape [", n, ", ", dim, "]");
  const auto grid = static_cast<unsigned>(n);
  if (out_type == ElementType::F32)
    launch_dependent(rmsnorm_kernel<float>, grid, kThreads, 0, stream, x, w, dim, eps, static_cast<float*>(out));
  else
    launch_dependent(rmsnorm_kernel<__nv_bfloat16>, grid, kThreads, 0, stream, x, w, dim, eps,
                     static_cast<__nv_bfloat16*>(out));
  FSVD_CUDA_CHECK_LAUNCH("rmsnorm_kernel");
}

}  // namespace fsvd::cuda
