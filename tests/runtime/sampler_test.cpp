#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

// Empirical frequency of each id over `draws` samples.
std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, int draws) {
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) f[s.sample(logits)] += 1.0 / draws;
  return f;
}

// Logits of a fixed distribution, ids deliberately not in probability order.
const std::vector<double> kProbs = {0.15, 0.05, 0.5, 0.1, 0.2};
std::vector<float> fixed_logits() {
  std::vector<float> l;
  for (double p : kProbs) l.push_back(static_cast<float>(std::log(p)) + 3.0f);
  return l;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  Sampler s({});
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const std::vector<float> l = testing::random_normal(101, seed);
    EXPECT_EQ(s.sample(l), std::max_element(l.begin(), l.end()) - l.begin());
  }
  const std::vector<float> tie = {0.0f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.sample(tie), 1);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const std::vector<float> l = testing::random_normal(50, 9, 0.5f);
  SamplingParams p{1.0f, 0, 1.0f, 1234};
  Sampler a(p), b(p);
  p.seed = 1235;
  Sampler c(p);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(l));
    tb.push_back(b.sample(l));
    tc.push_back(c.sample(l));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(Sampler, TopKOneIsGreedy) {
  Sampler s({1.5f, 1, 1.0f, 7});
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> l = testing::random_normal(37, seed, 0.1f);  // flat: sampling would stray
    EXPECT_EQ(s.sample(l), std::max_element(l.begin(), l.end()) - l.begin());
  }
}

TEST(Sampler, TemperatureOneDrawsTheSoftmax) {
  Sampler s({1.0f, 0, 1.0f, 11});
  const std::vector<double> f = frequencies(s, fixed_logits(), 20000);
  for (size_t i = 0; i < kProbs.size(); ++i) EXPECT_NEAR(f[i], kProbs[i], 0.015) << "id " << i;
}

TEST(Sampler, TemperatureSharpensOrFlattens) {
  for (float t : {0.5f, 2.0f}) {
    Sampler s({t, 0, 1.0f, 12});
    const std::vector<double> f = frequencies(s, fixed_logits(), 20000);
    double z = 0;
    for (double p : kProbs) z += std::pow(p, 1.0 / t);
    for (size_t i = 0; i < kProbs.size(); ++i)
      EXPECT_NEAR(f[i], std::pow(kProbs[i], 1.0 / t) / z, 0.015) << "T " << t << " id " << i;
  }
}

TEST(Sampler, TopKKeepsTheKMostProbable) {
  Sampler s({1.0f, 2, 1.0f, 13});
  const std::vector<double> f = frequencies(s, fixed_logits(), 20000);
  // Kept: ids 2 (0.5) and 4 (0.2), renormalised.
  EXPECT_NEAR(f[2], 0.5 / 0.7, 0.015);
  EXPECT_NEAR(f[4], 0.2 / 0.7, 0.015);
  EXPECT_EQ(f[0] + f[1] + f[3], 0.0);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // 0.5 + 0.2 = 0.7 < 0.75, so the third most probable (id 0, 0.15) is needed too.
  Sampler s({1.0f, 0, 0.75f, 14});
  const std::vector<double> f = frequencies(s, fixed_logits(), 20000);
  EXPECT_NEAR(f[2], 0.5 / 0.85, 0.015);
  EXPECT_NEAR(f[4], 0.2 / 0.85, 0.015);
  EXPECT_NEAR(f[0], 0.15 / 0.85, 0.015);
  EXPECT_EQ(f[1] + f[3], 0.0);
  // A tiny p keeps only the most probable token.
  Sampler one({1.0f, 0, 0.01f, 15});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(one.sample(fixed_logits()), 2);
}

TEST(Sampler, TopPNucleusLargerThanTheFirstSortedHead) {
  // 300 equal logits: weights are exactly 1, so p = 0.5 needs exactly 150
  // tokens (ids 0..149 on ties) and p = 0.501 needs 151.
  const std::vector<float> flat(300, 0.25f);
  for (auto [p, last] : {std::pair{0.5f, 149}, std::pair{0.501f, 150}}) {
    Sampler s({1.0f, 0, p, 17});
    int lo = 1000, hi = -1;
    for (int i = 0; i < 4000; ++i) {  // each of 151 ids is missed with odds e^-26
      const int id = s.sample(flat);
      lo = std::min(lo, id);
      hi = std::max(hi, id);
    }
    EXPECT_EQ(lo, 0) << "p " << p;
    EXPECT_EQ(hi, last) << "p " << p;
  }
}

TEST(Sampler, TopPDrawsOnlyFromTheBruteForceNucleus) {
  const std::vector<float> l = testing::random_normal(500, 18, 0.7f);
  std::vector<std::pair<double, int>> sorted;
  double total = 0;
  for (int i = 0; i < 500; ++i) {
    sorted.emplace_back(std::exp(double(l[i])), i);
    total += sorted.back().first;
  }
  std::sort(sorted.rbegin(), sorted.rend());
  std::vector<bool> in_nucleus(500, false);
  double cum = 0;
  for (size_t i = 0; cum < 0.9 * total; ++i) {
    cum += sorted[i].first;
    in_nucleus[sorted[i].second] = true;
  }
  Sampler s({1.0f, 0, 0.9f, 19});
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(in_nucleus[s.sample(l)]);
}

TEST(Sampler, TopPAppliesAfterTopK) {
  // top-k 3 keeps {0.5, 0.2, 0.15} (sum 0.85); renormalised, 0.5/0.85 = 0.59 < 0.6,
  // so top-p 0.6 keeps two of them.
  Sampler s({1.0f, 3, 0.6f, 16});
  const std::vector<double> f = frequencies(s, fixed_logits(), 20000);
  EXPECT_NEAR(f[2], 0.5 / 0.7, 0.015);
  EXPECT_NEAR(f[4], 0.2 / 0.7, 0.015);
  EXPECT_EQ(f[0] + f[1] + f[3], 0.0);
}

TEST(Sampler, RejectsBadParameters) {
  EXPECT_THROW(Sampler({-0.1f, 0, 1.0f, 0}), Error);
  EXPECT_THROW(Sampler({NAN, 0, 1.0f, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, -1, 1.0f, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, 0, 0.0f, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, 0, 1.5f, 0}), Error);
  Sampler s({});
  EXPECT_THROW(s.sample({}), Error);
}

}  // namespace
}  // namespace fsvd
