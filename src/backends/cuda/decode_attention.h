#pragma once
// The attention block of one decode token over a layer's dense KV cache (bf16,
// or fp32 for exact checks): RoPE on q and on the token's k, k and v stored at
// the cursor of the cache, then split-KV flash-decoding (GQA-aware, fp32 math)
// with the slices merged by the last CTA of each head group — one launch. The
// position is read from device memory, and the launch shape depends only on
// the shape and max_ctx, so one CUDA graph serves every token of a sequence.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// How the KV positions are cut. The grid holds `splits` CTAs per kv head (and
// per chunk of at most 8 query heads); at run time each CTA takes
// max(ceil(len / splits), min_split_len) positions, and CTAs whose slice lies
// beyond the valid length exit at once.
struct DecodeAttentionPlan {
  int splits = 0;
  int head_chunks = 0;  // CTAs per kv head along its query heads (group / 8, rounded up)
  // Per-slice results, then one arrival counter per (kv head, head chunk).
  size_t workspace_floats = 0;
};

// For the current device (the slice count follows the SM count and how many
// CTAs of the shape's kernel fit on an SM). bf16 and fp32 caches get the same
// plan, so the fp32 mode checks the partition bf16 runs.
DecodeAttentionPlan plan_decode_attention(const HeadShape& shape, int max_ctx);

// The token's q: [n_heads * head_dim], k and v: [n_kv_heads * head_dim], fp32
// before RoPE (not modified); inv_freq: [head_dim / 2] (rope_inv_freq). With
// p = *d_pos: rows k_cache[p], v_cache[p] are written (RoPE'd k and v, rounded
// to nearest even for a bf16 cache), and out: [n_heads * head_dim] fp32 gets
// the attention of RoPE'd q over positions [0, p] (scale 1/sqrt(head_dim);
// the token's own row as stored). Rows past p are never read. A position
// outside [0, max_ctx) writes no cache row and fills out with NaN, so the
// error shows instead of corrupting memory. workspace: at least
// plan_decode_attention(shape, cache.max_ctx).workspace_floats
// floats, zero-filled before its first use (each launch leaves it reusable).
// `pdl`: launched as a programmatic dependent of the previous kernel — its
// first cache reads, which no kernel of this step writes, overlap that
// kernel's tail.
void decode_attention(const float* q, const float* k, const float* v, const float* inv_freq,
                      const KvCacheLayer& cache, const int* d_pos, const HeadShape& shape, float* workspace,
                      size_t workspace_floats, float* out, cudaStream_t stream, bool pdl = false);

}  // namespace fsvd::cuda
