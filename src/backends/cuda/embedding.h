#pragma once
// The embedding gather that starts the decode step and prefill. Token ids are
// read from device memory, so a captured graph can be replayed for every token.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// x[i] = row d_tokens[i] of table [vocab, hidden] (bf16 or fp32, any row
// stride) as fp32, for the n (at most 65535) token ids in device memory: one
// token in the decode step, a prompt chunk in prefill. A token id outside
// [0, vocab) fills its row with NaN instead of reading out of bounds.
void embedding_lookup(const DeviceMatrix& table, const int32_t* d_tokens, int64_t n, float* x,
                      cudaStream_t stream);

}  // namespace fsvd::cuda
