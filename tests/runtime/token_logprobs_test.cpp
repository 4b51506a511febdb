#include "runtime/token_logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

TEST(TokenLogprobs, LogSoftmaxOfTheChosenTokenAndTheMostLikelyOnes) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  double z = 0;
  for (float l : logits) z += std::exp(l);
  const TokenLogprobs lp = token_logprobs(logits, 4, 3);
  EXPECT_EQ(lp.chosen.token, 4);
  EXPECT_NEAR(lp.chosen.logprob, 0.5 - std::log(z), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].token, 1);  // ties: lowest id first
  EXPECT_EQ(lp.top[1].token, 3);
  EXPECT_EQ(lp.top[2].token, 0);
  EXPECT_NEAR(lp.top[2].logprob, 1.0 - std::log(z), 1e-6);
  EXPECT_TRUE(token_logprobs(logits, 0, 0).top.empty());
  EXPECT_EQ(token_logprobs(logits, 0, kMaxTopLogprobs).top.size(), logits.size());
}

TEST(TokenLogprobs, StaysFiniteForLargeLogits) {
  const std::vector<float> logits = {1000.0f, 999.0f};
  const TokenLogprobs lp = token_logprobs(logits, 1, 1);
  EXPECT_NEAR(lp.chosen.logprob, -1.0 - std::log1p(std::exp(-1.0)), 1e-5);
}

TEST(TokenLogprobs, RefusesBadArguments) {
  const std::vector<float> logits = {0.0f, 1.0f};
  EXPECT_THROW(token_logprobs({}, 0, 0), Error);
  EXPECT_THROW(token_logprobs(logits, 2, 0), Error);
  EXPECT_THROW(token_logprobs(logits, -1, 0), Error);
  EXPECT_THROW(token_logprobs(logits, 0, -1), Error);
  EXPECT_THROW(token_logprobs(logits, 0, kMaxTopLogprobs + 1), Error);
}

}  // namespace
}  // namespace fsvd
