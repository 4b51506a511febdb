// The fidelity audit on random models: a runtime equal to the reference
// matches exactly, a different model does not, and the summary averages.
#include "eval/fidelity.h"

#include <gtest/gtest.h>

#include "backends/cpu/cpu_executor.h"
#include "testing/fails_with.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

testing::RandomModelSpec spec(uint64_t seed) {
  testing::RandomModelSpec s;
  s.config = testing::small_config(48, 96, 2, 4, 2, 12, 61);
  s.ranks = {9, 7, 7, 11, 13, 13, 15};
  s.seed = seed;
  return s;
}

TEST(Fidelity, CachedDecodeOfTheSameModelMatchesTheCacheFreeReference) {
  const Model m = testing::random_model(spec(1));
  CpuExecutor reference(m, 32, 1), tested(m, 32, 1);
  const PromptFidelity r = audit_prompt(reference, tested, {3, 14, 15, 9}, 12);
  EXPECT_EQ(r.reference, r.tested);
  EXPECT_EQ(r.reference.size(), 12u);
  EXPECT_TRUE(r.exact);
  EXPECT_TRUE(r.first);
  EXPECT_EQ(r.token_match, 1.0);
  EXPECT_LT(r.max_logit_error, 1e-5);
  EXPECT_LE(r.mean_logit_error, r.max_logit_error);
}

TEST(Fidelity, ADifferentModelIsCaught) {
  const Model a = testing::random_model(spec(1)), b = testing::random_model(spec(2));
  CpuExecutor reference(a, 32, 1), tested(b, 32, 1);
  const PromptFidelity r = audit_prompt(reference, tested, {3, 14, 15, 9}, 12);
  EXPECT_FALSE(r.exact);
  EXPECT_LT(r.token_match, 1.0);
  EXPECT_GT(r.mean_logit_error, 0.1);
}

TEST(Fidelity, SummaryAveragesOverPrompts) {
  PromptFidelity a, b;
  a.exact = a.first = true;
  a.token_match = 1.0;
  a.max_logit_error = 0.01;
  a.mean_logit_error = 0.005;
  b.first = true;
  b.token_match = 0.5;
  b.max_logit_error = 0.2;
  b.mean_logit_error = 0.1;
  const FidelitySummary s = summarize({a, b});
  EXPECT_EQ(s.prompts, 2);
  EXPECT_DOUBLE_EQ(s.exact_rate, 0.5);
  EXPECT_DOUBLE_EQ(s.first_rate, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_token_match, 0.75);
  EXPECT_DOUBLE_EQ(s.max_logit_error, 0.2);
  EXPECT_DOUBLE_EQ(s.mean_logit_error, 0.0525);
}

TEST(Fidelity, BadRequestsAreClear) {
  const Model m = testing::random_model(spec(1));
  CpuExecutor small(m, 8, 1), big(m, 32, 1);
  EXPECT_TRUE(test::fails_with([&] { audit_prompt(big, big, {}, 4); }, "needs a prompt"));
  EXPECT_TRUE(test::fails_with([&] { audit_prompt(big, small, {1, 2, 3}, 6); }, "context of 9"));
}

}  // namespace
}  // namespace fsvd
