#include "runtime/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace fsvd {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int top_n) {
  const char* where = "logprobs";
  check(!logits.empty(), where, "empty logits row");
  check(token >= 0 && static_cast<size_t>(token) < logits.size(), where, "token ", token, " outside the vocabulary");
  check(top_n >= 0 && top_n <= kMaxTopLogprobs, where, "top_n must be in [0, ", kMaxTopLogprobs, "], got ", top_n);
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  const double log_z = max + std::log(sum);
  auto logprob = [&](int32_t id) { return static_cast<float>(logits[id] - log_z); };

  TokenLogprobs out{{token, logprob(token)}, {}};
  if (top_n == 0) return out;
  const size_t n = std::min(static_cast<size_t>(top_n), logits.size());
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (size_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob(ids[i])});
  return out;
}

}  // namespace fsvd
