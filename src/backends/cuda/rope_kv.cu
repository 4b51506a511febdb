// RoPE + KV-cache store for one decode token (see rope_kv.h). One thread per
// rotation pair (j, j + head_dim/2) of every q and k head; the k-head threads
// also copy the two matching v values, so one launch covers all three.
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
  __nv_bfloat16* k_cache;
  __nv_bfloat16* v_cache;
  int max_ctx, n_heads, n_kv_heads, head_dim;
};

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
  __nv_bfloat16* krow = p.k_cache + int64_t{pos} * kv_dim;
  __nv_bfloat16* vrow = p.v_cache + int64_t{pos} * kv_dim;
  krow[i] = __float2bfloat16_rn(a * c - b * s);
  krow[i + half] = __float2bfloat16_rn(b * c + a * s);
  vrow[i] = __float2bfloat16_rn(p.v[i]);
  vrow[i + half] = __float2bfloat16_rn(p.v[i + half]);
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
  rope_store_kv_kernel<<<(work + kThreads - 1) / kThreads, kThreads, 0, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("rope_store_kv_kernel");
}

}  // namespace fsvd::cuda
