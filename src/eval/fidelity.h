#pragma once
// The fidelity audit of FlashSVD v1.5's Table 4: does a runtime (a backend,
// a precision, a graph mode) decode what an fp32 reference of the same model
// decodes when the reference keeps no KV cache and re-runs the whole sequence
// at every step?
#include <cstdint>
#include <vector>

#include "backends/executor.h"

namespace fsvd {

struct PromptFidelity {
  std::vector<int32_t> reference, tested;  // greedy continuations
  bool exact = false;                      // the whole continuation equal
  bool first = false;                      // the first token equal
  double token_match = 0;                  // fraction of positions with equal tokens
  // Relative L2 error of the tested logits against the reference's at each
  // step, both fed the reference's tokens (so a divergence does not compound).
  double max_logit_error = 0, mean_logit_error = 0;
};

// `reference` runs without its cache (every step from position 0); `tested`
// decodes with its own. Both need a context of prompt + n tokens.
PromptFidelity audit_prompt(Executor& reference, Executor& tested, const std::vector<int32_t>& prompt, int n);

struct FidelitySummary {
  int prompts = 0;
  double exact_rate = 0, first_rate = 0, mean_token_match = 0;  // over prompts
  double max_logit_error = 0, mean_logit_error = 0;             // over every step
};
FidelitySummary summarize(const std::vector<PromptFidelity>& results);

}  // namespace fsvd
