#pragma once
// Perplexity by the SVD-LLM protocol, the one compression papers report.
#include <cstdint>
#include <vector>

#include "backends/executor.h"

namespace fsvd {

struct Perplexity {
  double nll = 0;          // token-mean natural-log NLL over every scored token
  double perplexity = 0;   // exp(nll)
  int64_t windows = 0;     // windows scored
  int64_t predictions = 0; // tokens scored: windows * (window - 1)
};

// Cuts `tokens` (the whole text, tokenized once) into consecutive
// non-overlapping windows of `window` tokens, dropping the remainder, and
// scores each window on its own from position 0: its first window - 1 tokens
// predict the next one, so no token is conditioned on an earlier window and a
// window's first token is never predicted. `max_windows` > 0 keeps only the
// first ones. Needs executor.context_size() >= window >= 2 and at least one
// full window; throws Error otherwise or for an id outside the vocabulary.
Perplexity windowed_perplexity(Executor& executor, const std::vector<int32_t>& tokens, int window,
                               int64_t max_windows = 0);

}  // namespace fsvd
