#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "core/error.h"
#include "eval/nll.h"

namespace fsvd {

Perplexity windowed_perplexity(Executor& executor, const std::vector<int32_t>& tokens, int window,
                               int64_t max_windows) {
  const char* where = "windowed_perplexity";
  check(window >= 2, where, "window must hold at least 2 tokens, got ", window);
  check(window <= executor.context_size(), where, "window of ", window, " tokens exceeds the context size ",
        executor.context_size());
  const int64_t n = static_cast<int64_t>(tokens.size());
  Perplexity p;
  p.windows = n / window;
  check(p.windows > 0, where, "the text has ", n, " tokens, fewer than one window of ", window);
  if (max_windows > 0) p.windows = std::min(p.windows, max_windows);

  double total = 0;
  std::vector<float> logits;
  const std::span<const int32_t> all(tokens);
  for (int64_t w = 0; w < p.windows; ++w) {
    const auto win = all.subspan(w * window, window);
    total += window_nll_sum(executor, win, win.subspan(1), logits);
  }
  p.predictions = p.windows * (window - 1);
  p.nll = total / static_cast<double>(p.predictions);
  p.perplexity = std::exp(p.nll);
  return p;
}

}  // namespace fsvd
