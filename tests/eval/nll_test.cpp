#include "eval/nll.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

// Row for input token t at position p: logits[(t + 1) % vocab] = ln 3 (the
// "successor"), plus `drift` * p on logit 0; records window starts and sizes.
class SuccessorExecutor : public Executor {
 public:
  SuccessorExecutor(int vocab, int context, float drift)
      : vocab_(vocab), context_(context), drift_(drift) {}
  void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
               std::vector<float>& logits) override {
    EXPECT_TRUE(all_logits);
    EXPECT_LE(tokens.size() + pos, size_t(context_));
    calls.push_back({pos, int(tokens.size())});
    logits.assign(tokens.size() * vocab_, 0.0f);
    for (size_t i = 0; i < tokens.size(); ++i) {
      float* row = logits.data() + i * vocab_;
      row[(tokens[i] + 1) % vocab_] += std::log(3.0f);
      row[0] += drift_ * float(pos + i);
    }
  }
  int context_size() const override { return context_; }
  int vocab_size() const override { return vocab_; }
  std::vector<std::pair<int, int>> calls;  // (pos, n)

 private:
  int vocab_, context_;
  float drift_;
};

TEST(MeanNll, MatchesAHandComputedValue) {
  // Vocab 3: the successor has probability 3/5, the others 1/5 each.
  // Pairs (0→1), (1→2), (2→0) are successors, (0→2) is not.
  SuccessorExecutor ex(3, 2, 0.0f);
  const double nll = mean_nll(ex, {0, 1, 2, 0, 2});
  EXPECT_NEAR(nll, (3 * std::log(5.0 / 3.0) + std::log(5.0)) / 4, 1e-6);
  // Windows of the context size; the final token is never fed.
  EXPECT_EQ(ex.calls, (std::vector<std::pair<int, int>>{{0, 2}, {0, 2}}));
}

TEST(MeanNll, ScoresEveryTokenOnceWithPositionsRestartingPerWindow) {
  const int vocab = 7, context = 4;
  const float drift = 0.3f;
  const std::vector<int32_t> tokens = {3, 5, 6, 0, 2, 2, 4, 1, 5, 0, 3};
  SuccessorExecutor ex(vocab, context, drift);
  const double got = mean_nll(ex, tokens);
  // Token i (i >= 1) is predicted by token i-1 at window position (i-1) % context.
  double want = 0;
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::vector<double> row(vocab, 0.0);
    row[(tokens[i - 1] + 1) % vocab] += std::log(3.0);
    row[0] += drift * double((i - 1) % context);
    double z = 0;
    for (double l : row) z += std::exp(l);
    want += std::log(z) - row[tokens[i]];
  }
  want /= double(tokens.size() - 1);
  EXPECT_NEAR(got, want, 1e-6);
  EXPECT_EQ(ex.calls, (std::vector<std::pair<int, int>>{{0, 4}, {0, 4}, {0, 2}}));
}

TEST(MeanNll, RejectsTooFewTokensAndBadIds) {
  SuccessorExecutor ex(3, 4, 0.0f);
  EXPECT_THROW(mean_nll(ex, {1}), Error);
  EXPECT_THROW(mean_nll(ex, {1, 3}), Error);
  EXPECT_THROW(mean_nll(ex, {-1, 0}), Error);
}

}  // namespace
}  // namespace fsvd
