#include "compress/refit.h"

#define LAPACK_COMPLEX_CPP
#include <gtest/gtest.h>
#include <lapacke.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

constexpr int64_t kIn = 24, kOut = 20, kRank = 6;

// Rows [n, kIn] with mixed feature scales (a few dominant channels, as real activations have).
std::vector<float> activations(int64_t n, uint64_t seed) {
  std::vector<float> x = testing::random_normal(n * kIn, seed);
  const std::vector<float> mix = testing::random_normal(kIn * kIn, seed + 1, 0.3f);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < kIn; ++j) {
      double acc = x[r * kIn + j];
      for (int64_t t = 0; t < j; ++t) acc += double(x[r * kIn + t]) * mix[t * kIn + j];
      x[r * kIn + j] = float(acc * (j % 4 == 0 ? 5.0 : 1.0));
    }
  return x;
}

// What a compressed upstream does to the rows: a fixed linear distortion plus noise.
std::vector<float> distorted(const std::vector<float>& x, int64_t n, uint64_t seed) {
  const std::vector<float> e = testing::random_normal(kIn * kIn, seed, 0.15f);
  const std::vector<float> noise = testing::random_normal(n * kIn, seed + 1, 0.2f);
  std::vector<float> y(x);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < kIn; ++j)
      for (int64_t t = 0; t < kIn; ++t) y[r * kIn + j] += x[r * kIn + t] * e[t * kIn + j] + (t == j) * noise[r * kIn + j];
  return y;
}

Tensor weight() { return Tensor({kOut, kIn}, testing::random_normal(kOut * kIn, 7, 0.2f)); }

// ||X·Wᵀ − X'·Aᵀ·Bᵀ||_F over rows [from, to).
double output_error(const std::vector<float>& x, const std::vector<float>& xc, int64_t from, int64_t to,
                    const Tensor& w, const Tensor& first, const Tensor& second) {
  double sum = 0;
  for (int64_t r = from; r < to; ++r) {
    std::vector<double> z(kRank, 0.0);
    for (int64_t k = 0; k < kRank; ++k)
      for (int64_t i = 0; i < kIn; ++i) z[k] += double(xc[r * kIn + i]) * first.data()[k * kIn + i];
    for (int64_t o = 0; o < kOut; ++o) {
      double d = 0;
      for (int64_t i = 0; i < kIn; ++i) d += double(x[r * kIn + i]) * w.data()[o * kIn + i];
      for (int64_t k = 0; k < kRank; ++k) d -= z[k] * second.data()[o * kRank + k];
      sum += d * d;
    }
  }
  return std::sqrt(sum);
}

struct Fit {
  Gram compressed{kIn};
  CrossGram cross{kIn};
  LowRank svd;
};

// Statistics of rows [0, n) and the whitened truncation on the compressed rows.
Fit fit(const std::vector<float>& x, const std::vector<float>& xc, int64_t n, const Tensor& w) {
  Fit f;
  // Two uneven pieces: accumulation must not depend on how rows arrive.
  f.compressed.add(xc.data(), n / 3);
  f.compressed.add(xc.data() + (n / 3) * kIn, n - n / 3);
  f.cross.add(xc.data(), x.data(), n / 3);
  f.cross.add(xc.data() + (n / 3) * kIn, x.data() + (n / 3) * kIn, n - n / 3);
  f.svd = whitened_low_rank(w, cholesky_whitening(f.compressed), kRank);
  return f;
}

TEST(Refit, IsTheWhitenedSvdWithoutUpstreamError) {
  const int64_t n = 400;
  const std::vector<float> x = activations(n, 1);
  const Tensor w = weight();
  const Fit f = fit(x, x, n, w);
  const Tensor second = refit_second(w, f.svd.first, f.compressed, f.cross, 0.0);
  // The truncated whitened SVD's second factor is already least squares for its first factor on X.
  for (int64_t i = 0; i < second.numel(); ++i) EXPECT_NEAR(second.data()[i], f.svd.second.data()[i], 2e-4);
}

TEST(Refit, MatchesExplicitLeastSquares) {
  const int64_t n = 300;
  const std::vector<float> x = activations(n, 2), xc = distorted(x, n, 3);
  const Tensor w = weight();
  const Fit f = fit(x, xc, n, w);
  const Tensor second = refit_second(w, f.svd.first, f.compressed, f.cross, 0.0);
  // dgels on Z = X'·Aᵀ [n, r] against T = X·Wᵀ [n, out].
  std::vector<double> z(n * kRank, 0.0), t(n * kOut, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < kRank; ++k)
      for (int64_t i = 0; i < kIn; ++i) z[r * kRank + k] += double(xc[r * kIn + i]) * f.svd.first.data()[k * kIn + i];
    for (int64_t o = 0; o < kOut; ++o)
      for (int64_t i = 0; i < kIn; ++i) t[r * kOut + o] += double(x[r * kIn + i]) * w.data()[o * kIn + i];
  }
  ASSERT_EQ(LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', n, kRank, kOut, z.data(), kRank, t.data(), kOut), 0);
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t k = 0; k < kRank; ++k)
      EXPECT_NEAR(second.data()[o * kRank + k], t[k * kOut + o], 1e-3 * (1 + std::abs(t[k * kOut + o])));
}

TEST(Refit, ReducesTheLayersOutputErrorOnHeldOutRows) {
  const int64_t n = 1000, fitted = 900;  // 90% to fit, 10% held out
  const std::vector<float> x = activations(n, 4), xc = distorted(x, n, 5);
  const Tensor w = weight();
  const Fit f = fit(x, xc, fitted, w);
  const Tensor second = refit_second(w, f.svd.first, f.compressed, f.cross, 1e-3);
  const double before = output_error(x, xc, fitted, n, w, f.svd.first, f.svd.second);
  const double after = output_error(x, xc, fitted, n, w, f.svd.first, second);
  std::printf("held-out output error: whitened SVD %.4f, re-fit %.4f\n", before, after);
  EXPECT_LT(after, 0.9 * before);
}

TEST(Refit, RejectsMismatchedShapes) {
  const Tensor w = weight();
  Gram c(kIn);
  CrossGram m(kIn + 1);
  EXPECT_THROW(refit_second(w, Tensor({kRank, kIn}), c, m, 0.0), Error);
  EXPECT_THROW(refit_second(w, Tensor({kRank, kIn + 1}), c, CrossGram(kIn), 0.0), Error);
  EXPECT_THROW(refit_second(w, Tensor({kRank, kIn}), c, CrossGram(kIn), -1.0), Error);
  // No statistics: A·C·Aᵀ = 0 is not positive definite.
  EXPECT_THROW(refit_second(w, Tensor({kRank, kIn}, std::vector<float>(kRank * kIn, 1.0f)), c, CrossGram(kIn), 0.0),
               Error);
}

}  // namespace
}  // namespace fsvd
