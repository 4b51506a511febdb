#pragma once
// What the CPU sampler (runtime/sampler.h, steps 2-4) keeps of a row of
// logits, by a full sort in double, and the kept tokens' renormalised
// probabilities: the reference of cuda::sample_token, which the sampler
// itself does not expose (it returns a draw).
#include <vector>

#include "core/sampling_params.h"

namespace fsvd::optable {

// kEither marks tokens whose top-p running mass lies within rounding of the
// target: the device's fp32 weights err by about (|ln w| + a few) ulps each,
// so its cut may land either side.
enum class Kept { kOut, kIn, kEither };

struct KeptSet {
  std::vector<Kept> kept;
  std::vector<double> prob;  // of the kIn tokens; 0 elsewhere
};

KeptSet cpu_kept_set(const std::vector<float>& logits, const SamplingParams& c);

}  // namespace fsvd::optable
