#include "eval/nll.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace fsvd {

// -log softmax(row)[target], in double.
static double token_nll(const float* row, int vocab, int32_t target) {
  const double max = *std::max_element(row, row + vocab);
  double sum = 0;
  for (int v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
  return max + std::log(sum) - row[target];
}

double window_nll_sum(Executor& executor, std::span<const int32_t> inputs, std::span<const int32_t> targets,
                      std::vector<float>& logits) {
  const int vocab = executor.vocab_size();
  check(targets.size() <= inputs.size(), "window_nll_sum", targets.size(), " targets for ", inputs.size(),
        " inputs");
  for (size_t j = 0; j < targets.size(); ++j)
    check(targets[j] >= 0 && targets[j] < vocab, "window_nll_sum", "target token id ", targets[j],
          " is outside the vocabulary [0, ", vocab, ")");
  executor.forward(inputs, 0, true, logits);
  // Rows in parallel (a large vocabulary's row in double is most of a GPU
  // window's time), summed in order: the result does not depend on the thread
  // count.
  const auto rows = static_cast<int64_t>(targets.size());
  std::vector<double> nll(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < rows; ++j) nll[j] = token_nll(logits.data() + j * vocab, vocab, targets[j]);
  double total = 0;
  for (double x : nll) total += x;
  return total;
}

double mean_nll(Executor& executor, const std::vector<int32_t>& tokens) {
  const char* where = "mean_nll";
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int vocab = executor.vocab_size(), window = executor.context_size();
  check(n >= 2, where, "need at least 2 tokens to score, got ", n);
  for (int64_t i = 0; i < n; ++i)
    check(tokens[i] >= 0 && tokens[i] < vocab, where, "token id ", tokens[i], " at index ", i,
          " is outside the vocabulary [0, ", vocab, ")");

  double total = 0;
  std::vector<float> logits;
  const std::span<const int32_t> all(tokens);
  // The last token predicts nothing, so windows cover tokens [0, n - 1).
  for (int64_t start = 0; start < n - 1; start += window) {
    const int64_t len = std::min<int64_t>(window, n - 1 - start);
    total += window_nll_sum(executor, all.subspan(start, len), all.subspan(start + 1, len), logits);
  }
  return total / static_cast<double>(n - 1);
}

}  // namespace fsvd
