#pragma once
// Picks the next token on the GPU, so a decode step hands the host nothing but
// the token id. Semantics follow the CPU sampler (runtime/sampler.h):
//   temperature 0: greedy argmax, lowest id on ties (cuda::argmax);
//   else weights exp((logit - max) / T); top-k keeps the k most probable;
//   top-p keeps the smallest most-probable part of those whose mass (renormalised
//   after top-k) reaches top_p; the token is drawn in proportion to the weights.
// Differences, all deliberate:
//   - Order: tokens rank by logit, equal logits by lower id (the CPU ranks by
//     weight: the same order except among tokens whose weights underflow to 0).
//     A cut that splits equal logits keeps their lowest ids, as the CPU does.
//   - Weights are fp32 exponentials summed exactly in 2^-44 fixed point, so the
//     kept set and the draw are bit-for-bit deterministic; a top-p cut can differ
//     from the CPU's only where the running mass is within ~1e-6 of top_p.
//   - The draw comes from SplitMix64 keyed by (seed, *d_step), not the CPU's
//     mt19937_64: the same seed and step give the same token, every step a fresh
//     draw, and a captured CUDA graph replays it with no host work.
//   - Logits whose largest is +inf, or that hold no finite value, give the
//     argmax instead of an error (a kernel cannot throw); NaN logits rank as -inf.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/sampling_params.h"

namespace fsvd::cuda {

// One cluster of CTAs holds the whole row in shared memory.
constexpr int64_t kMaxSamplingVocab = 327680;

// *d_token = a token drawn from logits[0, n), n <= kMaxSamplingVocab, in one
// launch and no workspace (params checked by check_sampling_params). Only the
// launch shape depends on the host arguments;
// *d_step (any value; the token position, say) is read on the device, so a
// graph captured once draws afresh at each replay after *d_step changes. d_step
// may be null when temperature is 0. For tests, d_kept (n bytes) receives 1 for
// each token of the kept set and 0 elsewhere; it must be null for greedy.
void sample_token(const float* logits, int64_t n, const SamplingParams& config,
                  const int32_t* d_step, int32_t* d_token, cudaStream_t stream,
                  uint8_t* d_kept = nullptr);

}  // namespace fsvd::cuda
