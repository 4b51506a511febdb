#pragma once
// Prefill's attention (a prompt chunk of n tokens at once): causal
// FlashAttention-2-style attention on tensor cores over the layer's bf16
// cache read as dense (position t at pool row t: one sequence over an
// identity block table, as CudaExecutor lays its cache out), after
// rope_store_kv_rows (kv_store.h) has written the chunk's rows. Positions and
// lengths are host ints: prefill is not graph-captured.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// Whether the kernel takes this shape's head_dim: 64 or 128 (its swizzled
// tiles need rows of a multiple of 8 16-byte chunks, which 80 and 96 are
// not, and 256's output accumulators would not fit its registers).
bool prefill_attention_supports(const HeadShape& shape);

// Causal attention of n queries at positions pos + i over cache positions
// [0, pos + i] (pool rows [0, pos + i]); the cache must already hold
// [0, pos + n) and no row past it is read. q: [n, n_heads * head_dim] bf16
// (RoPE applied, as from rope_store_kv_rows); out: [n, n_heads * head_dim]
// bf16, the o-projection's input; both 16-byte aligned. Scale 1/sqrt(head_dim), fp32 softmax and
// accumulation, the probabilities rounded to bf16 for the tensor-core product
// with V. Query head h reads kv head h / (n_heads / n_kv_heads). One launch.
void prefill_attention(const __nv_bfloat16* q, const KvCacheLayer& cache, int pos, int n,
                       const HeadShape& shape, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace fsvd::cuda
