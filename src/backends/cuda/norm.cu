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

// One CTA per row. Rows whose width is a multiple of 4 (and aligned: all of
// prefill's), up to kMaxVecs float4s a thread, are read once into registers
// in 16-byte loads, the gain's before the wait (it is not the previous
// kernel's output): a decode step waits on this kernel's few dependent
// loads. Other rows take scalar loads, twice.
constexpr int kMaxVecs = 8;
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* x, const float* w, int64_t dim, float eps, T* out) {
  __shared__ double partial[kThreads / 32];
  allow_next_kernel_to_launch();  // a dependent launch (dependent_launch.h)
  const float* xr = x + blockIdx.x * dim;
  T* yr = out + blockIdx.x * dim;
  const bool vec = dim % 4 == 0 && dim <= 4 * kThreads * kMaxVecs && reinterpret_cast<uintptr_t>(xr) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(w) % 16 == 0 && reinterpret_cast<uintptr_t>(yr) % (4 * sizeof(T)) == 0;
  const int vecs = vec ? static_cast<int>(dim / 4) : 0;
  const auto* x4 = reinterpret_cast<const float4*>(xr);
  const auto* w4 = reinterpret_cast<const float4*>(w);
  float4 g[kMaxVecs], v[kMaxVecs];
#pragma unroll
  for (int j = 0; j < kMaxVecs; ++j)
    if (const int i = threadIdx.x + j * kThreads; i < vecs) g[j] = w4[i];
  wait_for_previous_kernel();
  double ss = 0;
  if (vec) {
#pragma unroll
    for (int j = 0; j < kMaxVecs; ++j)
      if (const int i = threadIdx.x + j * kThreads; i < vecs) v[j] = x4[i];
#pragma unroll
    for (int j = 0; j < kMaxVecs; ++j)
      if (threadIdx.x + j * kThreads < vecs)
        ss += double{v[j].x} * v[j].x + double{v[j].y} * v[j].y + double{v[j].z} * v[j].z + double{v[j].w} * v[j].w;
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) ss += static_cast<double>(xr[i]) * xr[i];
  }
  const double total = block_sum(ss, partial, kThreads / 32);
  const float inv = 1.0f / sqrtf(static_cast<float>(total / static_cast<double>(dim)) + eps);
  if (vec) {
#pragma unroll
    for (int j = 0; j < kMaxVecs; ++j)
      if (const int i = threadIdx.x + j * kThreads; i < vecs)
        store4(yr + 4 * i, make_float4(g[j].x * (v[j].x * inv), g[j].y * (v[j].y * inv), g[j].z * (v[j].z * inv),
                                       g[j].w * (v[j].w * inv)));
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
