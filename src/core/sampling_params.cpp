#include "core/sampling_params.h"

#include <cmath>

#include "core/error.h"

namespace fsvd {

void check_sampling_params(const SamplingParams& p) {
  check(std::isfinite(p.temperature) && p.temperature >= 0, "sampler", "temperature must be a finite number >= 0, got ",
        p.temperature);
  check(p.top_k >= 0, "sampler", "top_k must be >= 0, got ", p.top_k);
  check(p.top_p > 0 && p.top_p <= 1, "sampler", "top_p must be in (0, 1], got ", p.top_p);
}

}  // namespace fsvd
