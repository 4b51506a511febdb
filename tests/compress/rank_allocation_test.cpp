#include "compress/rank_allocation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

TEST(UniformRank, KeepsTheParameterRatio) {
  EXPECT_EQ(uniform_rank(64, 64, 0.6), 19);       // 4096·0.6/128 = 19.2
  EXPECT_EQ(uniform_rank(172, 64, 0.6), 27);      // 11008·0.6/236 = 27.98
  EXPECT_EQ(uniform_rank(4096, 4096, 0.5), 1024); // design.md's LLaMA-7B numbers
  EXPECT_EQ(uniform_rank(11008, 4096, 0.5), 1492);
  EXPECT_EQ(uniform_rank(8, 8, 0.01), 1);  // never below one direction
  for (int64_t r : {uniform_rank(100, 37, 0.8), uniform_rank(37, 100, 0.3)}) EXPECT_LE(r * 137, 3700);
  EXPECT_THROW(uniform_rank(8, 8, 0.0), Error);
  EXPECT_THROW(uniform_rank(8, 8, 1.0), Error);
  EXPECT_THROW(uniform_rank(0, 8, 0.5), Error);
}

// Spectrum s_j = decay^j of length n.
std::vector<double> geometric(int n, double decay) {
  std::vector<double> s(n);
  for (int j = 0; j < n; ++j) s[j] = std::pow(decay, j);
  return s;
}

TEST(LossGuidedRanks, KeepsTheBudgetAndFavoursSlowSpectra) {
  // Flat spectra lose more per dropped direction than fast-decaying ones.
  const std::vector<std::vector<double>> values = {geometric(20, 0.5), geometric(20, 0.95), geometric(20, 0.8),
                                                   geometric(20, 0.99)};
  const int64_t uniform = 6, max_rank = 15;
  const std::vector<int64_t> ranks = loss_guided_ranks(values, uniform * 4, max_rank);
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(std::accumulate(ranks.begin(), ranks.end(), int64_t{0}), uniform * 4);
  for (int64_t r : ranks) {
    EXPECT_GE(r, 1);
    EXPECT_LE(r, max_rank);
  }
  EXPECT_LT(ranks[0], ranks[2]);
  EXPECT_LT(ranks[2], ranks[1]);
  EXPECT_LE(ranks[1], ranks[3]);
}

TEST(LossGuidedRanks, MinimizesTheSummedRelativeLoss) {
  const std::vector<std::vector<double>> values = {geometric(10, 0.6), geometric(10, 0.9), geometric(10, 0.75)};
  const int64_t total = 12, max_rank = 8;
  auto cost = [&](const std::vector<int64_t>& r) {
    double sum = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      double all = 0, dropped = 0;
      for (size_t j = 0; j < values[i].size(); ++j) {
        all += values[i][j] * values[i][j];
        if (int64_t(j) >= r[i]) dropped += values[i][j] * values[i][j];
      }
      sum += dropped / all;
    }
    return sum;
  };
  const std::vector<int64_t> got = loss_guided_ranks(values, total, max_rank);
  // Exhaustive search over every split with the same bounds.
  double best = 1e9;
  for (int64_t a = 1; a <= max_rank; ++a)
    for (int64_t b = 1; b <= max_rank; ++b) {
      const int64_t c = total - a - b;
      if (c >= 1 && c <= max_rank) best = std::min(best, cost({a, b, c}));
    }
  EXPECT_NEAR(cost(got), best, 1e-12);
}

TEST(LossGuidedRanks, ClampsToWhatTheBoundsAllow) {
  const std::vector<std::vector<double>> values = {geometric(6, 0.5), geometric(6, 0.9)};
  EXPECT_EQ(loss_guided_ranks(values, 100, 4), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(loss_guided_ranks(values, 1, 4), (std::vector<int64_t>{1, 1}));
  // Equal spectra and an odd budget: the tie goes to the first matrix.
  EXPECT_EQ(loss_guided_ranks({geometric(6, 0.7), geometric(6, 0.7)}, 5, 4), (std::vector<int64_t>{3, 2}));
  // A zero matrix keeps only its one direction.
  EXPECT_EQ(loss_guided_ranks({std::vector<double>(6, 0.0), geometric(6, 0.9)}, 5, 4),
            (std::vector<int64_t>{1, 4}));
  EXPECT_THROW(loss_guided_ranks(values, 4, 7), Error);  // more rank than singular values
}

}  // namespace
}  // namespace fsvd
