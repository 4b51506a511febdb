#pragma once
// The small ops around the decode step's GEMVs: embedding row gather, the
// final RMSNorm and greedy argmax. Inputs that change per token (the token
// id) are read from device memory so a captured graph can be replayed.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fsvd::cuda {

// x[hidden] = table[*d_token] as fp32; table is bf16 [vocab, hidden] row-major.
// A token id outside [0, vocab) fills x with NaN instead of reading out of bounds.
void embedding_lookup(const __nv_bfloat16* table, int64_t vocab, int64_t hidden,
                      const int32_t* d_token, float* x, cudaStream_t stream);

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for rows r < n of width dim,
// the same arithmetic as cpu::rmsnorm (sum of squares in double). One CTA per row.
void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out,
             cudaStream_t stream);

// *d_index = the lowest index of the largest of logits[0, n); NaN values never
// win (all NaN gives 0). One launch of one CTA; n up to 2^31 - 1.
void argmax(const float* logits, int64_t n, int32_t* d_index, cudaStream_t stream);

}  // namespace fsvd::cuda
