#pragma once
// FlashAttention-2-style attention on tensor cores (bf16), one kernel for two
// callers: prefill's causal attention (a prompt chunk of n tokens of one
// sequence over its blocks of the layer's bf16 pool, after rope_store_kv_rows
// (kv_store.h) has written the chunk's rows), and the encoder's non-causal
// attention over sequences packed without padding. Positions and lengths are
// host ints or device offsets: neither caller is graph-captured.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <cstdint>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// Whether the kernel takes this shape's head_dim: 64 or 128 (its swizzled
// tiles need rows of a multiple of 8 16-byte chunks, which 80 and 96 are
// not, and 256's output accumulators would not fit its registers).
bool prefill_attention_supports(const HeadShape& shape);

// Causal attention of n queries at positions pos + i over cache positions
// [0, pos + i] of the sequence whose block table (device memory, entries for
// positions [0, pos + n)) is `blocks`; null: position t is pool row t (one
// sequence over the pool's blocks in order). The cache (bf16, or fp8 widened
// to bf16 on chip) must already hold [0, pos + n) and no position past it is read. q: [n, n_heads * head_dim] bf16
// (RoPE applied, as from rope_store_kv_rows); out: [n, n_heads * head_dim]
// bf16, the o-projection's input; both 16-byte aligned. Scale 1/sqrt(head_dim), fp32 softmax and
// accumulation, the probabilities rounded to bf16 for the tensor-core product
// with V. Query head h reads kv head h / (n_heads / n_kv_heads). One launch.
void prefill_attention(const __nv_bfloat16* q, const KvCacheLayer& cache, const int32_t* blocks, int pos, int n,
                       const HeadShape& shape, __nv_bfloat16* out, cudaStream_t stream);

// bf16 rows of a packed buffer: row r at data + r * ld (ld in elements, a multiple of 8; data 16-byte aligned).
struct PackedRows {
  const __nv_bfloat16* data = nullptr;
  int64_t ld = 0;
};
struct PackedRowsOut {
  __nv_bfloat16* data = nullptr;
  int64_t ld = 0;
};

// Non-causal attention of `seqs` sequences packed without padding: sequence s
// is rows [seq_offsets[s], seq_offsets[s + 1]) (device memory, seqs + 1
// entries; max_len bounds their lengths) of q [rows, n_heads * head_dim], k
// and v [rows, n_kv_heads * head_dim] (sharing a row stride), and each of its
// queries attends over its own sequence's keys only. Writes out [rows,
// n_heads * head_dim], which may be q itself (a CTA reads its queries before
// it writes their outputs, and no other CTA reads them). Scale
// 1/sqrt(head_dim), fp32 softmax and accumulation.
// `scale_head_dim` > 0 scales by 1/sqrt(scale_head_dim) instead: heads
// zero-padded to a size the kernel takes keep their own scale. On Hopper,
// head_dim 64 batches that fill a wave of 128-query tiles run the wgmma
// kernel of flash_attention_sm90.h instead, to the same contract.
void packed_attention(const PackedRows& q, const PackedRows& k, const PackedRows& v, const int32_t* seq_offsets,
                      int seqs, int max_len, const HeadShape& shape, const PackedRowsOut& out, cudaStream_t stream,
                      int scale_head_dim = 0);

}  // namespace fsvd::cuda
