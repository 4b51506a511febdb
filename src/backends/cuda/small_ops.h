#pragma once
// The small ops around the decode step's GEMVs: embedding row gather, the
// final RMSNorm, greedy argmax and handing the sampled token to the host. Inputs that change per token (the token
// id) are read from device memory so a captured graph can be replayed.
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

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for rows r < n of width dim,
// the same arithmetic as cpu::rmsnorm (sum of squares in double), stored as
// `out_type` (bf16: rounded to nearest even, the input of prefill's GEMMs).
// One CTA per row.
void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, void* out, ElementType out_type,
             cudaStream_t stream);

// *d_index = the lowest index of the largest of logits[0, n); NaN values never
// win (all NaN gives 0). One launch of one CTA; n up to 2^31 - 1.
void argmax(const float* logits, int64_t n, int32_t* d_index, cudaStream_t stream);

// The end of a decode step that sampled *d_token at position p = *d_pos:
// ring[p mod ring_size] = *d_token (a slot of the ring for any p), then
// *d_pos = p + 1, the next step's position. `ring` is host memory mapped
// for the device (cudaHostAllocMapped), so the token reaches the host with
// no copy, in a slot the following step does not touch while the host reads
// it (ring_size >= 2).
void publish_token(const int32_t* d_token, int32_t* d_pos, int32_t* ring, int ring_size, cudaStream_t stream);

}  // namespace fsvd::cuda
