#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace fsvd {

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  check_sampling_params(params);
}

static int32_t argmax(std::span<const float> logits) {
  // std::max_element keeps the first of equal maxima, like torch.argmax.
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t Sampler::sample(std::span<const float> logits) {
  check(!logits.empty(), "sampler", "no logits to sample from");
  if (params_.temperature == 0.0f) return argmax(logits);

  // Unnormalised probabilities exp((l - max) / T), kept in double.
  const double max = *std::max_element(logits.begin(), logits.end());
  check(std::isfinite(max), "sampler", "logits are not finite (largest is ", max, ")");
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i)
    candidates_.emplace_back(std::exp((logits[i] - max) / params_.temperature),
                             static_cast<int32_t>(i));
  // Most probable first; ties by lower id so the order is fully determined.
  auto more_probable = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t kept = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < kept) {
    kept = params_.top_k;
    std::partial_sort(candidates_.begin(), candidates_.begin() + kept, candidates_.end(),
                      more_probable);
  }
  if (params_.top_p < 1.0f) {
    double total = 0;
    for (size_t i = 0; i < kept; ++i) total += candidates_[i].first;
    const double target = params_.top_p * total;
    // The nucleus is usually small: sort a growing head instead of the whole
    // vocabulary, until the head reaches the target mass.
    double cum = 0;
    size_t m = 0, sorted = 0;
    for (size_t head = 64;; head *= 2) {
      const size_t upto = std::min(head, kept);
      std::partial_sort(candidates_.begin() + sorted, candidates_.begin() + upto,
                        candidates_.begin() + kept, more_probable);
      while (m < upto && cum < target) cum += candidates_[m++].first;
      if (cum >= target || upto == kept) break;
      sorted = upto;
    }
    kept = std::max<size_t>(m, 1);
  }

  double total = 0;
  for (size_t i = 0; i < kept; ++i) total += candidates_[i].first;
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;  // in [0, total)
  double cum = 0;
  for (size_t i = 0; i < kept; ++i) {
    cum += candidates_[i].first;
    if (u < cum) return candidates_[i].second;
  }
  return candidates_[kept - 1].second;  // u rounded up to total
}

}  // namespace fsvd
