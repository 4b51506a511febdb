#pragma once
// The attention block of one decode step over a layer's paged KV cache (bf16,
// fp8 e4m3, or fp32 for exact checks), for a batch of sequences, one new token
// each: RoPE on each row's q and k, its k and v stored at its position's
// slot, then split-KV flash-decoding over its own pages (GQA-aware, fp32 math) with the
// slices merged by the last CTA of each head group — one launch. Positions
// and block tables are read from device memory, and the launch shape depends
// only on the head shape, the max context and the batch size, so one CUDA
// graph per batch size serves every step.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// How the KV positions are cut. The grid holds `splits` CTAs per (row, kv
// head, chunk of at most 8 query heads); at run time each CTA takes
// max(ceil(len / splits), min_split_len) positions of its row's length, and
// CTAs whose slice lies beyond it exit at once.
struct DecodeAttentionPlan {
  int splits = 0;
  int head_chunks = 0;  // CTAs per kv head along its query heads (group / 8, rounded up)
  // Per-slice results, then one arrival counter per (row, kv head, head chunk).
  size_t workspace_floats = 0;
};

// For the current device and `batch` rows of positions below max_ctx (the
// slice count follows the SM count and how many CTAs of the shape's kernel
// fit on an SM). bf16, fp8 and fp32 caches get the same plan, so the fp32 mode
// checks the partition bf16 runs. `batch_invariant`: the slices of one row
// whatever the batch, so that each row's result is bitwise what it is alone.
DecodeAttentionPlan plan_decode_attention(const HeadShape& shape, int max_ctx, int batch,
                                          bool batch_invariant = false);

// Row b of `batch`: position p = rows.pos[b], block table row rows.seq[b]
// (b without seq). qkv: q [batch, n_heads * head_dim], k and v
// [batch, n_kv_heads * head_dim], fp32 before RoPE with row strides of at
// least a row (slices of one packed output, say; not modified); inv_freq:
// [head_dim / 2] (rope_inv_freq). Position p's slot gets the row's RoPE'd k
// and its v (rounded to nearest even for a bf16 or fp8 cache), and out row b:
// [n_heads * head_dim] (rows contiguous; fp32, or bf16 rounded to nearest
// even: the GEMM path's o projection reads it so) gets the attention of RoPE'd q
// over positions [0, p] of the sequence (scale 1/sqrt(head_dim); the token's
// own row as stored). Positions past p are never read. A padding row (p < 0)
// writes no slot and zeros to its out row; a position at or past max_ctx
// writes no slot and fills its out row with NaN, so the error shows instead
// of corrupting memory. The table's entries for positions [0, p] must name
// blocks of the pool. workspace: at least plan_decode_attention(shape,
// max_ctx, batch, batch_invariant).workspace_floats floats, zero-filled before its first use
// (each launch leaves it reusable). `pdl`: launched as a programmatic
// dependent of the previous kernel — its first cache reads, which no kernel
// of this step writes, overlap that kernel's tail.
// The output rows: fp32, or bf16 (AttentionOut::bf16).
struct AttentionOut {
  AttentionOut(float* p) : data(p), type(ElementType::F32) {}  // NOLINT(google-explicit-constructor): fp32 is the common case
  static AttentionOut bf16(void* p) { return AttentionOut(p, ElementType::BF16); }
  void* data;
  ElementType type;

 private:
  AttentionOut(void* p, ElementType t) : data(p), type(t) {}
};

void decode_attention(const QkvRows& qkv, const float* inv_freq, const KvCacheLayer& cache, const PagedRows& rows,
                      int batch, int max_ctx, const HeadShape& shape, float* workspace, size_t workspace_floats,
                      AttentionOut out, cudaStream_t stream, bool pdl = false, bool batch_invariant = false);

}  // namespace fsvd::cuda
