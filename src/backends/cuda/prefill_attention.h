#pragma once
// Prefill's attention (a prompt chunk of n tokens of one sequence at once):
// causal FlashAttention-2-style attention on tensor cores over the sequence's
// blocks of the layer's bf16 pool, after rope_store_kv_rows (kv_store.h) has
// written the chunk's rows. Positions and lengths are host ints: prefill is
// not graph-captured.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// Whether the kernel takes this shape's head_dim: 64 or 128 (its swizzled
// tiles need rows of a multiple of 8 16-byte chunks, which 80 and 96 are
// not, and 256's output accumulators would not fit its registers).
bool prefill_attention_supports(const HeadShape& shape);

// Causal attention of n queries at positions pos + i over cache positions
// [0, pos + i] of the sequence whose block table (device memory, entries for
// positions [0, pos + n)) is `blocks`; null: position t is pool row t (one
// sequence over the pool's blocks in order). The cache must already hold
// [0, pos + n) and no position past it is read. q: [n, n_heads * head_dim] bf16
// (RoPE applied, as from rope_store_kv_rows); out: [n, n_heads * head_dim]
// bf16, the o-projection's input; both 16-byte aligned. Scale 1/sqrt(head_dim), fp32 softmax and
// accumulation, the probabilities rounded to bf16 for the tensor-core product
// with V. Query head h reads kv head h / (n_heads / n_kv_heads). One launch.
void prefill_attention(const __nv_bfloat16* q, const KvCacheLayer& cache, const int32_t* blocks, int pos, int n,
                       const HeadShape& shape, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace fsvd::cuda
