#include "backends/cpu/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "testing/random_model.h"

namespace fsvd::cpu {
namespace {

using testing::random_normal;

TEST(CpuOps, RmsnormMatchesPlainLoops) {
  const int64_t n = 7, dim = 37;
  const float eps = 1e-5f;
  std::vector<float> x = random_normal(n * dim, 1, 3.0f), w = random_normal(dim, 2), out(n * dim);
  rmsnorm(x.data(), w.data(), n, dim, eps, out.data());
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) {
      const double want = x[r * dim + i] * inv * w[i];
      EXPECT_NEAR(out[r * dim + i], want, 1e-6 * (1 + std::abs(want))) << r << "," << i;
    }
  }
}

TEST(CpuOps, RmsnormNormalisesEveryRowOnTheParallelPath) {
  // Large enough to take the parallel path; every row must be normalised once.
  const int64_t n = 129, dim = 131;
  std::vector<float> x = random_normal(n * dim, 3), w(dim, 1.0f), out(n * dim);
  rmsnorm(x.data(), w.data(), n, dim, 1e-6f, out.data());
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(out[r * dim + i]) * out[r * dim + i];
    EXPECT_NEAR(ss / dim, 1.0, 1e-4) << "row " << r;
  }
}

TEST(CpuOps, RopeRotatesHalfPairs) {
  // head_dim 4: pairs (0, 2) and (1, 3), not interleaved neighbours.
  std::vector<float> x = {1, 0, 0, 0};
  const float inv_freq[] = {1.0f, 0.5f};
  rope(x.data(), 1, 4, 1, 4, /*pos0=*/1, inv_freq);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-7);
  EXPECT_NEAR(x[1], 0.0, 1e-7);
  EXPECT_NEAR(x[2], std::sin(1.0), 1e-7);
  EXPECT_NEAR(x[3], 0.0, 1e-7);
}

TEST(CpuOps, RopeMatchesPlainLoopsOnStridedRows) {
  const int n = 5, heads = 3, hd = 8, half = hd / 2, pos0 = 11;
  const int64_t ld = heads * hd + 5;  // trailing columns belong to someone else
  std::vector<float> inv(half);
  for (int j = 0; j < half; ++j) inv[j] = static_cast<float>(std::pow(10000.0, -2.0 * j / hd));
  const std::vector<float> x0 = random_normal(n * ld, 4);
  std::vector<float> x = x0;
  rope(x.data(), n, ld, heads, hd, pos0, inv.data());
  for (int r = 0; r < n; ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int j = 0; j < half; ++j) {
        const double a = x0[r * ld + h * hd + j], b = x0[r * ld + h * hd + j + half];
        const double angle = double(pos0 + r) * inv[j];
        EXPECT_NEAR(x[r * ld + h * hd + j], a * std::cos(angle) - b * std::sin(angle), 2e-5);
        EXPECT_NEAR(x[r * ld + h * hd + j + half], b * std::cos(angle) + a * std::sin(angle), 2e-5);
      }
    }
    for (int64_t i = heads * hd; i < ld; ++i) EXPECT_EQ(x[r * ld + i], x0[r * ld + i]);
  }
}

TEST(CpuOps, SiluMulMatchesPlainLoops) {
  for (int64_t count : {1001, 20011}) {  // serial and parallel paths
    std::vector<float> g = random_normal(count, 5, 4.0f), u = random_normal(count, 6), out(count);
    silu_mul(g.data(), u.data(), count, out.data());
    for (int64_t i = 0; i < count; ++i) {
      const double want = g[i] / (1 + std::exp(-double(g[i]))) * u[i];
      ASSERT_NEAR(out[i], want, 1e-6 * (1 + std::abs(want))) << i;
    }
  }
}

TEST(CpuOps, SoftmaxIsStableForLargeLogits) {
  const int64_t n = 13;
  std::vector<float> x = random_normal(n, 7, 2.0f);
  for (float& v : x) v += 1000.0f;  // exp would overflow without the max shift
  std::vector<double> want(n);
  double mx = x[0], sum = 0;
  for (float v : x) mx = std::max(mx, double(v));
  for (int64_t i = 0; i < n; ++i) sum += want[i] = std::exp(x[i] - mx);
  softmax(x.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(x[i], want[i] / sum, 1e-6) << i;
}

TEST(CpuOps, LayernormMatchesPlainLoops) {
  const int64_t n = 5, dim = 33;
  const float eps = 1e-12f;
  std::vector<float> x = random_normal(n * dim, 4, 2.0f), w = random_normal(dim, 5), b = random_normal(dim, 6);
  for (float& v : x) v += 3.0f;  // a mean far from 0
  std::vector<float> out(n * dim);
  layernorm(x.data(), w.data(), b.data(), n, dim, eps, out.data());
  for (int64_t r = 0; r < n; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i) mean += x[r * dim + i] / double(dim);
    for (int64_t i = 0; i < dim; ++i) var += (x[r * dim + i] - mean) * (x[r * dim + i] - mean) / double(dim);
    for (int64_t i = 0; i < dim; ++i) {
      const double want = (x[r * dim + i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
      EXPECT_NEAR(out[r * dim + i], want, 1e-5 * (1 + std::abs(want))) << r << "," << i;
    }
  }
}

TEST(CpuOps, GeluIsTheErfForm) {
  std::vector<float> x = {-3.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.0f};
  gelu(x.data(), static_cast<int64_t>(x.size()));
  // x * Phi(x), Phi the standard normal CDF (the tanh approximation differs in the 4th digit).
  const std::vector<float> want = {-0.00404969f, -0.15865525f, 0.0f, 0.34573123f, 0.84134475f, 1.95449974f};
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], want[i], 1e-6) << i;
}

TEST(CpuOps, L2NormalizeMakesUnitVectorsAndKeepsZero) {
  std::vector<float> x = {3.0f, 4.0f}, zero = {0.0f, 0.0f};
  l2_normalize(x.data(), 2);
  EXPECT_FLOAT_EQ(x[0], 0.6f);
  EXPECT_FLOAT_EQ(x[1], 0.8f);
  l2_normalize(zero.data(), 2);
  EXPECT_EQ(zero[0], 0.0f);
}

}  // namespace
}  // namespace fsvd::cpu
