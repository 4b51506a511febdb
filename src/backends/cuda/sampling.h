#pragma once
// Picks the next token of every sequence of a decode step on the GPU, so the
// step hands the host nothing but token ids. Semantics follow the CPU sampler
// (runtime/sampler.h), row by row, each row under its own SamplingParams:
//   temperature 0: greedy argmax, lowest id on ties, NaN never wins (as cuda::argmax);
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
//   - The draw comes from SplitMix64 keyed by (seed, step), not the CPU's
//     mt19937_64: the same seed and step give the same token, every step a fresh
//     draw, and a captured CUDA graph replays it with no host work.
//   - Logits whose largest is +inf, or that hold no finite value, give the
//     argmax instead of an error (a kernel cannot throw); NaN logits rank as -inf.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/sampling_params.h"

namespace fsvd::cuda {

// One cluster of CTAs holds a whole row in shared memory.
constexpr int64_t kMaxSamplingVocab = 327680;
// Rows of one launch (the grid's second dimension).
constexpr int kMaxSamplingRows = 65535;

// For each row b < rows: d_token[b] = the token picked from the n logits at
// logits + b * ld (n <= kMaxSamplingVocab, ld >= n) by d_params[b], the draw
// keyed by (d_params[b].seed, d_step[b]). One launch, no workspace; only the
// launch shape depends on the host arguments, and parameters and steps are
// read on the device, so a graph captured once per batch size serves every
// step whatever its rows ask for. Rows are independent: a row gives the same
// token in any batch.
//   d_params: rows SamplingParams, each passing check_sampling_params (the
//     caller checks them as it writes them: a kernel cannot throw). The host's
//     own struct rather than a struct of arrays: the executor copies what its
//     requests hold as it is, and each row reads its 24 bytes once.
//   d_step: the key of each row's draw (the token's position, say); a negative
//     step marks a padding row, whose CTAs leave at once and write nothing.
//   d_kept (tests): [rows, n]; each row's kept set as 1 and 0 (greedy: its
//     token alone); padding rows untouched.
void sample_tokens(const float* logits, int rows, int64_t n, int64_t ld, const SamplingParams* d_params,
                   const int32_t* d_step, int32_t* d_token, cudaStream_t stream, uint8_t* d_kept = nullptr);

}  // namespace fsvd::cuda
