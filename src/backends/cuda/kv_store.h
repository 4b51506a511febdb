#pragma once
// Writing rows into a KV cache: prefill's k and v rows with RoPE applied (and
// its q rotated on the way), and the decode step's append to the low-rank
// cache at a position held in device memory.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// n tokens at positions [pos, pos + n) (host ints: prefill is not
// graph-captured). q: [n, n_heads * head_dim], k and v:
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

// Row *d_pos of `rows` (bf16, row stride ld, max_rows rows) = x[0, cols)
// rounded to bf16; nothing when *d_pos is outside [0, max_rows). The decode
// step's append to a cache whose position lives in device memory. One launch.
void store_row_bf16(const float* x, int64_t cols, const int* d_pos, int max_rows, __nv_bfloat16* rows, int64_t ld,
                    cudaStream_t stream);

}  // namespace fsvd::cuda
