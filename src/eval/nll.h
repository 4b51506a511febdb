#pragma once
// Negative log-likelihood of a token sequence under a model, for perplexity.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/executor.h"

namespace fsvd {

// Token-mean NLL (natural log) of tokens[1..] given their prefix. The sequence
// is cut into consecutive windows of executor.context_size() tokens, each run
// from position 0 with one all-logits forward; a window's last row predicts
// the next window's first token, so every token but the first is scored once,
// conditioned on the tokens of its own window. Log-softmax in double.
// Throws Error for fewer than 2 tokens or an id outside the vocabulary.
double mean_nll(Executor& executor, const std::vector<int32_t>& tokens);

// Runs `inputs` from position 0 (one all-logits forward) and returns the summed
// NLL of targets[j] under row j, for j < targets.size() <= inputs.size().
// `logits` is scratch, reused across calls.
double window_nll_sum(Executor& executor, std::span<const int32_t> inputs, std::span<const int32_t> targets,
                      std::vector<float>& logits);

}  // namespace fsvd
