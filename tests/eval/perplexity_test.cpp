#include "eval/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

// Row for input token t: logits[(t + 1) % vocab] = ln 3 (the "successor"),
// 0 elsewhere; records each forward's (pos, n).
class SuccessorExecutor : public Executor {
 public:
  SuccessorExecutor(int vocab, int context) : vocab_(vocab), context_(context) {}
  void forward(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits) override {
    EXPECT_TRUE(all_logits);
    calls.push_back({pos, int(tokens.size())});
    logits.assign(tokens.size() * vocab_, 0.0f);
    for (size_t i = 0; i < tokens.size(); ++i) logits[i * vocab_ + (tokens[i] + 1) % vocab_] = std::log(3.0f);
  }
  int context_size() const override { return context_; }
  int vocab_size() const override { return vocab_; }
  std::vector<std::pair<int, int>> calls;

 private:
  int vocab_, context_;
};

TEST(WindowedPerplexity, MatchesAHandComputedValue) {
  // Vocab 3: a successor has probability 3/5, any other token 1/5.
  // Windows [0 1 2] and [0 2 1]; the trailing 1 is dropped. Scored pairs:
  // 0→1, 1→2 (successors), 0→2, 2→1 (not); 2→0 across the windows is never scored.
  SuccessorExecutor ex(3, 8);
  const Perplexity p = windowed_perplexity(ex, {0, 1, 2, 0, 2, 1, 1}, 3);
  const double nll = (2 * std::log(5.0 / 3.0) + 2 * std::log(5.0)) / 4;
  EXPECT_NEAR(p.nll, nll, 1e-6);
  EXPECT_NEAR(p.perplexity, std::exp(nll), 1e-6);  // = 5 / sqrt(3) = 2.88675
  EXPECT_NEAR(p.perplexity, 2.886751, 1e-5);
  EXPECT_EQ(p.windows, 2);
  EXPECT_EQ(p.predictions, 4);
  EXPECT_EQ(ex.calls, (std::vector<std::pair<int, int>>{{0, 3}, {0, 3}}));
}

TEST(WindowedPerplexity, MaxWindowsKeepsTheFirstOnes) {
  SuccessorExecutor ex(3, 8);
  const Perplexity p = windowed_perplexity(ex, {0, 1, 2, 0, 2, 1, 1}, 3, 1);
  EXPECT_NEAR(p.nll, std::log(5.0 / 3.0), 1e-6);
  EXPECT_EQ(p.windows, 1);
  EXPECT_EQ(p.predictions, 2);
  EXPECT_EQ(ex.calls.size(), 1u);
}

TEST(WindowedPerplexity, RejectsBadWindowsAndTokens) {
  SuccessorExecutor ex(3, 4);
  EXPECT_THROW(windowed_perplexity(ex, {0, 1, 2}, 1), Error);        // no prediction per window
  EXPECT_THROW(windowed_perplexity(ex, {0, 1, 2, 0, 1}, 5), Error);  // beyond the context
  EXPECT_THROW(windowed_perplexity(ex, {0, 1}, 3), Error);           // not one full window
  EXPECT_THROW(windowed_perplexity(ex, {0, 1, 7}, 3), Error);        // id outside the vocabulary
}

}  // namespace
}  // namespace fsvd
