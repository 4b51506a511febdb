// Embedding gather, RMSNorm and argmax for the decode step (see small_ops.h).
// Each moves at most a few MB (argmax over a 256k vocab reads 1 MB), so they
// favour one simple launch over peak bandwidth.
#include "backends/cuda/small_ops.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kArgmaxThreads = 1024;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    embedding_kernel(const T* table, int64_t vocab, int64_t hidden, int64_t ld, const int32_t* tokens,
                     float* x) {
  // One grid row (blockIdx.y) per token.
  const int32_t t = tokens[blockIdx.y];
  x += blockIdx.y * hidden;
  const bool ok = t >= 0 && t < vocab;
  const T* row = table + (ok ? t : 0) * ld;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < hidden;
       i += int64_t{gridDim.x} * blockDim.x)
    x[i] = ok ? to_float(row[i]) : nanf("");
}

// Four values of a row as stored in T at p (16-byte aligned for fp32, 8 for bf16).
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16(v.x, v.y), pack_bf16(v.z, v.w));
}

// One CTA per row; rows whose width is a multiple of 4 (and aligned: all of
// prefill's) move in 16-byte loads, the others in scalar loads. (Scalar
// loads took 39 us for prefill's [4096, 4096] rows on H200, these 29 us.)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* x, const float* w, int64_t dim, float eps, T* out) {
  __shared__ double partial[kThreads / 32];
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
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  double total = 0;
  for (int i = 0; i < kThreads / 32; ++i) total += partial[i];
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

struct Best {
  float v;
  int i;
};
// Larger value wins, the lower index on ties; NaN never compares better.
__device__ __forceinline__ Best better(Best a, Best b) {
  return b.v > a.v || (b.v == a.v && b.i < a.i) ? b : a;
}

__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* logits, int n, int32_t* index) {
  __shared__ Best partial[kArgmaxThreads / 32];
  Best best{-INFINITY, INT_MAX};
  // 16-byte loads over the aligned bulk, scalar loads before and after it.
  const int head = min(n, static_cast<int>((16 - reinterpret_cast<uintptr_t>(logits) % 16) % 16 / 4));
  const int groups = (n - head) / 4;
  const float4* bulk = reinterpret_cast<const float4*>(logits + head);
  for (int g = threadIdx.x; g < groups; g += kArgmaxThreads) {
    const float4 v = bulk[g];
    const int i = head + 4 * g;
    best = better(best, {v.x, i});
    best = better(best, {v.y, i + 1});
    best = better(best, {v.z, i + 2});
    best = better(best, {v.w, i + 3});
  }
  const int tail = head + 4 * groups;  // fewer than 4 values on either side of the bulk
  if (static_cast<int>(threadIdx.x) < head) best = better(best, {logits[threadIdx.x], static_cast<int>(threadIdx.x)});
  if (tail + static_cast<int>(threadIdx.x) < n)
    best = better(best, {logits[tail + threadIdx.x], tail + static_cast<int>(threadIdx.x)});
#pragma unroll
  for (int off = 16; off > 0; off /= 2)
    best = better(best, {__shfl_xor_sync(0xffffffffu, best.v, off), __shfl_xor_sync(0xffffffffu, best.i, off)});
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kArgmaxThreads / 32; ++w) best = better(best, partial[w]);
    *index = best.i == INT_MAX ? 0 : best.i;
  }
}

__global__ void publish_token_kernel(const int32_t* token, int32_t* pos, int32_t* ring, int ring_size) {
  const int32_t p = *pos;
  // A non-negative slot even for a (never valid) negative position: no write outside the ring.
  ring[(p % ring_size + ring_size) % ring_size] = *token;
  *pos = p + 1;
}

}  // namespace

void embedding_lookup(const DeviceMatrix& table, const int32_t* d_tokens, int64_t n, float* x,
                      cudaStream_t stream) {
  const char* where = "embedding_lookup";
  check(table.data != nullptr && d_tokens != nullptr && x != nullptr, where, "null argument");
  check(n >= 1 && n <= 65535, where, n, " tokens (1..65535)");
  check(table.rows >= 1 && table.rows <= INT32_MAX && table.cols >= 1 && table.ld >= table.cols,
        where, "table of [", table.rows, ", ", table.cols, "] with row stride ", table.ld);
  check(reinterpret_cast<uintptr_t>(table.data) % element_bytes(table.type) == 0, where,
        "misaligned table");
  const dim3 blocks(static_cast<unsigned>(std::min<int64_t>((table.cols + kThreads - 1) / kThreads, 1024)),
                    static_cast<unsigned>(n));
  if (table.type == ElementType::F32)
    embedding_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(table.data), table.rows,
                                                      table.cols, table.ld, d_tokens, x);
  else
    embedding_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(table.data),
                                                      table.rows, table.cols, table.ld, d_tokens, x);
  FSVD_CUDA_CHECK_LAUNCH("embedding_kernel");
}

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, void* out, ElementType out_type,
             cudaStream_t stream) {
  const char* where = "cuda::rmsnorm";
  check(x != nullptr && w != nullptr && out != nullptr, where, "null argument");
  check(n >= 1 && n <= INT32_MAX && dim >= 1, where, "shape [", n, ", ", dim, "]");
  const auto grid = static_cast<unsigned>(n);
  if (out_type == ElementType::F32)
    rmsnorm_kernel<<<grid, kThreads, 0, stream>>>(x, w, dim, eps, static_cast<float*>(out));
  else
    rmsnorm_kernel<<<grid, kThreads, 0, stream>>>(x, w, dim, eps, static_cast<__nv_bfloat16*>(out));
  FSVD_CUDA_CHECK_LAUNCH("rmsnorm_kernel");
}

void argmax(const float* logits, int64_t n, int32_t* d_index, cudaStream_t stream) {
  const char* where = "argmax";
  check(logits != nullptr && d_index != nullptr, where, "null argument");
  check(reinterpret_cast<uintptr_t>(logits) % alignof(float) == 0, where, "misaligned logits");
  check(n >= 1 && n < INT32_MAX, where, n, " logits");
  argmax_kernel<<<1, kArgmaxThreads, 0, stream>>>(logits, static_cast<int>(n), d_index);
  FSVD_CUDA_CHECK_LAUNCH("argmax_kernel");
}

void publish_token(const int32_t* d_token, int32_t* d_pos, int32_t* ring, int ring_size, cudaStream_t stream) {
  const char* where = "publish_token";
  check(d_token != nullptr && d_pos != nullptr && ring != nullptr, where, "null argument");
  check(ring_size >= 2, where, "ring of ", ring_size, " slots (at least 2)");
  publish_token_kernel<<<1, 1, 0, stream>>>(d_token, d_pos, ring, ring_size);
  FSVD_CUDA_CHECK_LAUNCH("publish_token_kernel");
}

}  // namespace fsvd::cuda
