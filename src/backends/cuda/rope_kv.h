#pragma once
// The epilogue of the q/k/v reconstruction for one decode token: RoPE on q
// (in place) and k, then k and v stored into the layer's cache (rounded to
// bf16, or exactly in an fp32 cache) at the current position. The position is
// read from device memory so a captured CUDA graph stays valid while the
// cache grows.
#include <cuda_runtime_api.h>

#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

// q: [n_heads * head_dim] fp32, rotated in place; k, v: [n_kv_heads * head_dim]
// fp32 (not modified); inv_freq: [head_dim / 2] (rope_inv_freq, uploaded
// once); *d_pos: the token's position. Rows k_cache[*d_pos], v_cache[*d_pos]
// are written (HF rotate_half convention, angle float(pos) * inv_freq[j] in
// fp32; a bf16 cache rounds to nearest even). A position outside [0, max_ctx)
// writes no cache row and fills q with NaN, so the error shows instead of
// corrupting memory. One launch.
void rope_store_kv(float* q, const float* k, const float* v, const float* inv_freq,
                   const int* d_pos, const HeadShape& shape, const KvCacheLayer& cache,
                   cudaStream_t stream);

}  // namespace fsvd::cuda
