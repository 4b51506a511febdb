#pragma once
// Prefill (a prompt chunk of n tokens at once): the RoPE + KV-cache store
// epilogue of the q/k/v GEMMs, and causal FlashAttention-2-style attention on
// tensor cores over the layer's dense bf16 cache. Positions and lengths are
// host ints: prefill is not graph-captured.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// n tokens at positions [pos, pos + n). q: [n, n_heads * head_dim], k and v:
// [n, n_kv_heads * head_dim], fp32 row-major with row strides ldq, ldk, ldv in
// elements (they may be column slices of one packed GEMM output); not
// modified. RoPE as in decode_attention (HF rotate_half, angle
// float(pos + i) * inv_freq[j] in fp32, round to nearest even), so the cache
// rows [pos, pos + n) come out bit-identical to n decode steps. The rotated q
// goes to q_out: [n, n_heads * head_dim] bf16, contiguous; q and q_out may
// both be null (the low-rank KV cache's rebuild stores k and v only), and v
// may be null when the v rows are already in the cache (prefill's v GEMM
// writes them there as bf16). One launch.
void rope_store_kv_rows(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, const float* inv_freq, int pos, int n, const HeadShape& shape,
                        const KvCacheLayer& cache, __nv_bfloat16* q_out, cudaStream_t stream);

// Causal attention of n queries at positions pos + i over cache positions
// [0, pos + i]; the cache must already hold [0, pos + n) and no row past it is
// read. q: [n, n_heads * head_dim] bf16 (RoPE applied, as from
// rope_store_kv_rows); out: [n, n_heads * head_dim] bf16, the o-projection's
// input; both 16-byte aligned. Scale 1/sqrt(head_dim), fp32 softmax and
// accumulation, the probabilities rounded to bf16 for the tensor-core product
// with V. Query head h reads kv head h / (n_heads / n_kv_heads). One launch.
void prefill_attention(const __nv_bfloat16* q, const KvCacheLayer& cache, int pos, int n,
                       const HeadShape& shape, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace fsvd::cuda
