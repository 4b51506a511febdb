#pragma once
// Log-probabilities of tokens under the model's raw distribution: the
// log-softmax of the logits before temperature, top-k or top-p (what OpenAI's
// and vLLM's `logprobs` report), for the chosen token and the most likely ones.
#include <cstdint>
#include <span>
#include <vector>

namespace fsvd {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first (lowest id on ties)
};

// Most top-N alternatives a request may ask for (OpenAI's limit).
constexpr int kMaxTopLogprobs = 20;

// `token`'s log-probability in `logits` and the `top_n` (0..kMaxTopLogprobs)
// most likely tokens. Throws Error for an empty row, a token outside it or
// top_n out of range.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int top_n);

}  // namespace fsvd
