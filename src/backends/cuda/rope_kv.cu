// RoPE + KV-cache store for one decode token (see rope_kv.h). One thread per
// rotation pair (j, j + head_dim/2) of every q and k head; the k-head threads
// also copy the two matching v values, so one launch covers all three. The
// cache's element type is a template parameter: only the final store differs.
#include "backends/cuda/rope_kv.h"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 128;

struct Params {
  float* q;
  const float* k;
  const float* v;
  const float* inv_freq;
  const int* pos;
  void* k_cache;
  void* v_cache;
  int max_ctx, n_heads, n_kv_heads, head_dim;
};

// fp32 to a cache element: bf16 rounds to nearest even, fp32 stores as is.
__device__ __forceinline__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ void store(float* p, float x) { *p = x; }

template <typename T>
__global__ void __launch_bounds__(kThreads) rope_store_kv_kernel(const Params p) {
  const int half = p.head_dim / 2;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (p.n_heads + p.n_kv_heads) * half) return;
  const int head = t / half, j = t % half;
  const int pos = *p.pos;
  const bool pos_ok = pos >= 0 && pos < p.max_ctx;
  if (head < p.n_heads) {
    float* qh = p.q + head * p.head_dim;
    if (!pos_ok) {
      qh[j] = qh[j + half] = nanf("");
      return;
    }
    float s, c;
    sincosf(static_cast<float>(pos) * p.inv_freq[j], &s, &c);
    const float a = qh[j], b = qh[j + half];
    qh[j] = a * c - b * s;
    qh[j + half] = b * c + a * s;
    return;
  }
  if (!pos_ok) return;
  const int kv_dim = p.n_kv_heads * p.head_dim;
  const int i = (head - p.n_heads) * p.head_dim + j;
  float s, c;
  sincosf(static_cast<float>(pos) * p.inv_freq[j], &s, &c);
  const float a = p.k[i], b = p.k[i + half];
  T* krow = static_cast<T*>(p.k_cache) + int64_t{pos} * kv_dim;
  T* vrow = static_cast<T*>(p.v_cache) + int64_t{pos} * kv_dim;
  store(krow + i, a * c - b * s);
  store(krow + i + half, b * c + a * s);
  store(vrow + i, p.v[i]);
  store(vrow + i + half, p.v[i + half]);
}

}  // namespace

void rope_store_kv(float* q, const float* k, const float* v, const float* inv_freq,
                   const int* d_pos, const HeadShape& shape, const KvCacheLayer& cache,
                   cudaStream_t stream) {
  const char* where = "rope_store_kv";
  check_head_shape(shape, where);
  check_cache(cache, where);
  check(q != nullptr && k != nullptr && v != nullptr && inv_freq != nullptr && d_pos != nullptr,
        where, "null argument");
  const Params p{q, k, v, inv_freq, d_pos, cache.k, cache.v, cache.max_ctx,
                 shape.n_heads, shape.n_kv_heads, shape.head_dim};
  const int work = (shape.n_heads + shape.n_kv_heads) * (shape.head_dim / 2);
  const unsigned blocks = (work + kThreads - 1) / kThreads;
  if (cache.type == ElementType::F32)
    rope_store_kv_kernel<float><<<blocks, kThreads, 0, stream>>>(p);
  else
    rope_store_kv_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("rope_store_kv_kernel");
}

}  // namespace fsvd::cuda
