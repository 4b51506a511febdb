#pragma once
// Writing rows into a KV cache: k and v rows with RoPE applied into a paged
// pool (and q rotated on the way), and the decode step's append to the
// low-rank cache at a position held in device memory.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// n rows of one prompt chunk or of a batch of sequences: row i at position
// rows.pos[i] of block table row rows.seq[i] (i without seq). qkv: q
// [n, n_heads * head_dim], k and v [n, n_kv_heads * head_dim], fp32 with row
// strides in elements (they may be column slices of one packed GEMM output);
// not modified. RoPE as in decode_attention (HF rotate_half, angle
// float(pos) * inv_freq[j] in fp32, round to nearest even for a bf16 or fp8 cache),
// so the slots come out bit-identical to decode steps: k RoPE'd and v as it
// is go to the row's slot; a padding row (pos < 0), and a position past
// table_reach(rows, cache), writes none. The rotated q goes to q_out:
// [n, n_heads * head_dim] bf16, contiguous (a padding row's zeros); qkv.q and
// q_out may both be null (the low-rank KV cache's rebuild stores k and v
// only), and qkv.v may be null when the v rows are already in the cache
// (prefill's v GEMM writes them there as bf16). One launch.
void rope_store_kv_rows(const QkvRows& qkv, const float* inv_freq, const PagedRows& rows, int n,
                        const HeadShape& shape, const KvCacheLayer& cache, __nv_bfloat16* q_out, cudaStream_t stream);

// Row *d_pos of `rows` (bf16, row stride ld, max_rows rows) = x[0, cols)
// rounded to bf16; nothing when *d_pos is outside [0, max_rows). The decode
// step's append to a cache whose position lives in device memory. One launch.
void store_row_bf16(const float* x, int64_t cols, const int* d_pos, int max_rows, __nv_bfloat16* rows, int64_t ld,
                    cudaStream_t stream);

}  // namespace fsvd::cuda
