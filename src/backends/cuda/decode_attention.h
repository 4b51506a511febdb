#pragma once
// Decode attention for one query token over a layer's dense KV cache (bf16, or
// fp32 for exact checks): split-KV flash-decoding, GQA-aware, fp32 math. The
// valid length is read from device memory (*d_pos + 1 positions), and the
// launch shape depends only on the shape and max_ctx, so one CUDA graph serves
// every token of a sequence.
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
  size_t workspace_floats = 0;
};

// For the current device and a cache of `cache_type` values (the slice count
// follows the SM count and how many CTAs of the chosen kernel fit on an SM).
DecodeAttentionPlan plan_decode_attention(const HeadShape& shape, int max_ctx,
                                          ElementType cache_type = ElementType::BF16);

// q: [n_heads * head_dim] fp32 (RoPE applied); out: [n_heads * head_dim] fp32;
// workspace: at least plan_decode_attention(shape, cache.max_ctx,
// cache.type).workspace_floats floats. Attends to cache positions [0, *d_pos]
// with scale 1/sqrt(head_dim). A position outside [0, max_ctx) reads nothing
// and fills out with NaN. Two launches (split pass, combine).
void decode_attention(const float* q, const KvCacheLayer& cache, const int* d_pos,
                      const HeadShape& shape, float* workspace, size_t workspace_floats, float* out,
                      cudaStream_t stream);

}  // namespace fsvd::cuda
