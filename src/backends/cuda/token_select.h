#pragma once
// The end of a decode step that picks its token on the GPU: the hand-off of
// the picked token to the host, and a one-row greedy pick. Both read their
// inputs from device memory, so a captured graph can be replayed for every
// token.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fsvd::cuda {

// *d_index = the lowest index of the largest of logits[0, n); NaN values never
// win (all NaN gives 0). One launch of one CTA; n up to 2^31 - 1. The decode
// step's greedy rows go through sample_tokens (sampling.h), which picks the
// same token; this is the plain one-CTA pass the benches measure it against.
void argmax(const float* logits, int64_t n, int32_t* d_index, cudaStream_t stream);

// The end of a decode step that sampled *d_token at position p = *d_pos:
// ring[p mod ring_size] = *d_token (a slot of the ring for any p), then
// *d_pos = p + 1, the next step's position. `ring` is host memory mapped
// for the device (cudaHostAllocMapped), so the token reaches the host with
// no copy, in a slot the following step does not touch while the host reads
// it (ring_size >= 2).
void publish_token(const int32_t* d_token, int32_t* d_pos, int32_t* ring, int ring_size, cudaStream_t stream);

}  // namespace fsvd::cuda
