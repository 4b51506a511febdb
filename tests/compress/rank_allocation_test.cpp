#include "compress/rank_allocation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <utility>
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

namespace fsvd {
namespace {

// Predicted loss and parameters of `ranks` (-1: dense).
std::pair<double, int64_t> loss_and_params(const std::vector<MatrixSpectrum>& m, const std::vector<int64_t>& ranks) {
  double loss = 0;
  int64_t params = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    if (ranks[i] < 0) {
      params += m[i].out * m[i].in;
      continue;
    }
    params += ranks[i] * (m[i].out + m[i].in);
    for (size_t j = ranks[i]; j < m[i].singular_values.size(); ++j)
      loss += m[i].sensitivity * m[i].singular_values[j] * m[i].singular_values[j];
  }
  return {loss, params};
}

// The least predicted loss within `budget`, by trying every combination.
double brute_force(const std::vector<MatrixSpectrum>& m, int64_t budget) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> ranks(m.size(), 1);
  std::function<void(size_t)> go = [&](size_t i) {
    if (i == m.size()) {
      const auto [loss, params] = loss_and_params(m, ranks);
      if (params <= budget) best = std::min(best, loss);
      return;
    }
    const int64_t be = m[i].out * m[i].in / (m[i].out + m[i].in);
    for (int64_t r = 1; r <= be; ++r) {
      ranks[i] = r;
      go(i + 1);
    }
    ranks[i] = -1;
    go(i + 1);
  };
  go(0);
  return best;
}

std::vector<MatrixSpectrum> random_matrices(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.1, 2.0), decay(0.3, 0.9);
  std::vector<MatrixSpectrum> m;
  const int64_t shapes[][2] = {{6, 6}, {8, 5}, {4, 9}};
  for (const auto& s : shapes) {
    MatrixSpectrum x{s[0], s[1], {}, u(rng)};
    double v = u(rng) * 4;
    for (int64_t j = 0; j < std::min(s[0], s[1]); ++j) x.singular_values.push_back(v *= decay(rng));
    m.push_back(x);
  }
  return m;
}

TEST(BudgetedRanks, StaysWithinTheBudgetAndIsNearTheBestAllocation) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<MatrixSpectrum> m = random_matrices(seed);
    for (int64_t budget : {40, 60, 80, 110}) {
      const std::vector<int64_t> ranks = budgeted_ranks(m, budget);
      const auto [loss, params] = loss_and_params(m, ranks);
      EXPECT_LE(params, budget);
      // Greedy by value per parameter over concave items: never worse than
      // the optimum with one largest item's parameters less (13 = 4 + 9).
      EXPECT_LE(loss, brute_force(m, budget - 13) + 1e-12) << "seed " << seed << " budget " << budget;
      EXPECT_GE(loss, brute_force(m, budget) - 1e-12);
    }
  }
}

TEST(BudgetedRanks, InsensitiveMatricesGiveWayAndSensitiveOnesStayDense) {
  std::vector<MatrixSpectrum> m = random_matrices(3);
  m[0].sensitivity = 0;
  m[1].sensitivity = 1e9;
  const std::vector<int64_t> ranks = budgeted_ranks(m, 80);
  EXPECT_EQ(ranks[0], 1);
  EXPECT_EQ(ranks[1], -1);  // 40 parameters dense
}

TEST(BudgetedRanks, NoMatrixGoesBelowItsMinimumRank) {
  std::vector<MatrixSpectrum> m = random_matrices(5);
  m[0].sensitivity = 0;  // would give way down to rank 1
  m[0].min_rank = 2;
  const std::vector<int64_t> ranks = budgeted_ranks(m, 60);
  EXPECT_EQ(ranks[0], 2);
  EXPECT_LE(loss_and_params(m, ranks).second, 60);
  // Minimum ranks are paid first: 2·12 + 13 + 13 = 50.
  EXPECT_THROW(budgeted_ranks(m, 49), Error);
  EXPECT_NO_THROW(budgeted_ranks(m, 50));
}

TEST(BudgetedRanks, RejectsBudgetsAndSpectraItCannotUse) {
  const std::vector<MatrixSpectrum> m = random_matrices(4);
  EXPECT_THROW(budgeted_ranks(m, 12 + 13 + 12), Error);  // rank 1 everywhere needs 38
  EXPECT_NO_THROW(budgeted_ranks(m, 38));
  std::vector<MatrixSpectrum> bad = m;
  bad[2].singular_values.pop_back();
  EXPECT_THROW(budgeted_ranks(bad, 100), Error);
  bad = m;
  bad[0].sensitivity = -1;
  EXPECT_THROW(budgeted_ranks(bad, 100), Error);
  bad = m;
  bad[0].min_rank = 4;  // beyond the break-even rank 3 of a 6x6 matrix
  EXPECT_THROW(budgeted_ranks(bad, 100), Error);
  bad[0].min_rank = 0;
  EXPECT_THROW(budgeted_ranks(bad, 100), Error);
}

}  // namespace
}  // namespace fsvd
