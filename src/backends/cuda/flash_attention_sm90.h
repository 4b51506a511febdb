#pragma once
// packed_attention (flash_attention.h) on Hopper's warpgroup products: the
// encoder's non-causal attention over packed sequences at head_dim 64, bf16.
// flash_attention.cu takes it where it applies; same contract and rounding
// (fp32 scores, softmax and accumulation, the probabilities rounded to bf16
// for the product with V).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/flash_attention.h"

namespace fsvd::cuda {

// The current device runs it (compute capability 9.0, and the build has
// sm_90a code) and the head size is 64.
bool packed_attention_sm90_supports(int head_dim);

// Arguments as packed_attention's, checked there; query head h reads kv head
// h / group; scores scaled by scale_log2 = log2(e) / sqrt(d).
void packed_attention_sm90(const PackedRows& q, const PackedRows& k, const PackedRows& v, const int32_t* seq_offsets,
                           int seqs, int max_len, int n_heads, int group, const PackedRowsOut& out, float scale_log2,
                           cudaStream_t stream);

}  // namespace fsvd::cuda
