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

// Rows [from, to) of X·Wᵀ [n, kOut] or of X·Aᵀ [n, rank] (any row-major weight).
std::vector<double> times_transposed(const std::vector<float>& x, int64_t from, int64_t to, const Tensor& w) {
  const int64_t out = w.dim(0);
  std::vector<double> y((to - from) * out, 0.0);
  for (int64_t r = from; r < to; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < kIn; ++i) y[(r - from) * out + o] += double(x[r * kIn + i]) * w.data()[o * kIn + i];
  return y;
}

// ||X·Wᵀ − X'·Aᵀ·Bᵀ||_F over rows [from, to).
double output_error(const std::vector<float>& x, const std::vector<float>& xc, int64_t from, int64_t to,
                    const Tensor& w, const Tensor& first, const Tensor& second) {
  const std::vector<double> target = times_transposed(x, from, to, w), z = times_transposed(xc, from, to, first);
  const int64_t rank = first.dim(0);
  double sum = 0;
  for (int64_t r = 0; r < to - from; ++r)
    for (int64_t o = 0; o < kOut; ++o) {
      double d = target[r * kOut + o];
      for (int64_t k = 0; k < rank; ++k) d -= z[r * rank + k] * second.data()[o * rank + k];
      sum += d * d;
    }
  return std::sqrt(sum);
}

struct Fit {
  Gram compressed{kIn};
  CrossGram cross{kIn, kIn};
};

// Statistics of rows [0, n).
Fit fit(const std::vector<float>& x, const std::vector<float>& xc, int64_t n) {
  Fit f;
  // Two uneven pieces: accumulation must not depend on how rows arrive.
  f.compressed.add(xc.data(), n / 3);
  f.compressed.add(xc.data() + (n / 3) * kIn, n - n / 3);
  f.cross.add(xc.data(), x.data(), n / 3);
  f.cross.add(xc.data() + (n / 3) * kIn, x.data() + (n / 3) * kIn, n - n / 3);
  return f;
}

TEST(Refit, IsTheDenseWeightWithoutUpstreamError) {
  const int64_t n = 400;
  const std::vector<float> x = activations(n, 1);
  const Tensor w = weight();
  const Fit f = fit(x, x, n);
  const Tensor m = compensated_weight(w, cholesky_whitening(f.compressed), f.cross);
  for (int64_t i = 0; i < w.numel(); ++i) EXPECT_NEAR(m.data()[i], w.data()[i], 1e-4);
}

TEST(Refit, MatchesExplicitLeastSquares) {
  const int64_t n = 300;
  const std::vector<float> x = activations(n, 2), xc = distorted(x, n, 3);
  const Tensor w = weight();
  const Fit f = fit(x, xc, n);
  const Tensor m = compensated_weight(w, cholesky_whitening(f.compressed), f.cross);
  // dgels on X' [n, in] against T = X·Wᵀ [n, out].
  std::vector<double> design(xc.begin(), xc.begin() + n * kIn), t = times_transposed(x, 0, n, w);
  ASSERT_EQ(LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', n, kIn, kOut, design.data(), kIn, t.data(), kOut), 0);
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t i = 0; i < kIn; ++i)
      EXPECT_NEAR(m.data()[o * kIn + i], t[i * kOut + o], 1e-3 * (1 + std::abs(t[i * kOut + o])));
}

// The rank-r truncation of M* is the best rank-r fit on the fitted rows: it
// beats the whitened SVD of W on X' and the least-squares second factor for
// that SVD's first factor (what the re-fit used to be).
TEST(Refit, TruncationIsTheBestRankRFitOnTheFittedRows) {
  const int64_t n = 500;
  const std::vector<float> x = activations(n, 8), xc = distorted(x, n, 9);
  const Tensor w = weight();
  const Fit f = fit(x, xc, n);
  const Whitening white = cholesky_whitening(f.compressed);
  const LowRank svd = whitened_low_rank(w, white, kRank);
  const LowRank rrr = whitened_low_rank(compensated_weight(w, white, f.cross), white, kRank);
  // Least-squares B for the SVD's A: dgels on Z = X'·Aᵀ against X·Wᵀ.
  std::vector<double> z = times_transposed(xc, 0, n, svd.first), t = times_transposed(x, 0, n, w);
  ASSERT_EQ(LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', n, kRank, kOut, z.data(), kRank, t.data(), kOut), 0);
  Tensor second({kOut, kRank});
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t k = 0; k < kRank; ++k) second.data()[o * kRank + k] = static_cast<float>(t[k * kOut + o]);
  const double best = output_error(x, xc, 0, n, w, rrr.first, rrr.second);
  EXPECT_LT(best, output_error(x, xc, 0, n, w, svd.first, second));
  EXPECT_LT(best, output_error(x, xc, 0, n, w, svd.first, svd.second));
}

TEST(Refit, ReducesTheLayersOutputErrorOnHeldOutRows) {
  const int64_t n = 1000, fitted = 900;  // 90% to fit, 10% held out
  const std::vector<float> x = activations(n, 4), xc = distorted(x, n, 5);
  const Tensor w = weight();
  const Fit f = fit(x, xc, fitted);
  const Whitening white = cholesky_whitening(f.compressed, 1e-3);
  const LowRank svd = whitened_low_rank(w, white, kRank);
  const LowRank rrr = whitened_low_rank(compensated_weight(w, white, f.cross), white, kRank);
  const double before = output_error(x, xc, fitted, n, w, svd.first, svd.second);
  const double after = output_error(x, xc, fitted, n, w, rrr.first, rrr.second);
  std::printf("held-out output error: whitened SVD %.4f, re-fit %.4f\n", before, after);
  EXPECT_LT(after, 0.9 * before);
}

// T = X·Wᵀ − E [n, kOut]: what a linear adding into the residual must output
// when the compressed residual already carries an error E, part of it
// predictable from the inputs (E = X·Gᵀ + noise).
std::vector<float> residual_target(const std::vector<float>& x, int64_t n, const Tensor& w, uint64_t seed) {
  const Tensor g({kOut, kIn}, testing::random_normal(kOut * kIn, seed, 0.1f));
  const std::vector<float> noise = testing::random_normal(n * kOut, seed + 1, 0.1f);
  const std::vector<double> y = times_transposed(x, 0, n, w), e = times_transposed(x, 0, n, g);
  std::vector<float> t(n * kOut);
  for (int64_t i = 0; i < n * kOut; ++i) t[i] = static_cast<float>(y[i] - e[i] - noise[i]);
  return t;
}

// ||T − X'·Aᵀ·Bᵀ||_F over rows [from, to).
double residual_error(const std::vector<float>& t, const std::vector<float>& xc, int64_t from, int64_t to,
                      const LowRank& lr) {
  const std::vector<double> z = times_transposed(xc, from, to, lr.first);
  const int64_t rank = lr.first.dim(0);
  double sum = 0;
  for (int64_t r = 0; r < to - from; ++r)
    for (int64_t o = 0; o < kOut; ++o) {
      double d = t[(r + from) * kOut + o];
      for (int64_t k = 0; k < rank; ++k) d -= z[r * rank + k] * lr.second.data()[o * rank + k];
      sum += d * d;
    }
  return std::sqrt(sum);
}

TEST(Refit, FittedWeightMatchesExplicitLeastSquaresAndTheDenseOutputFit) {
  const int64_t n = 300;
  const std::vector<float> x = activations(n, 12), xc = distorted(x, n, 13);
  const Tensor w = weight();
  const std::vector<float> t = residual_target(x, n, w, 14);
  const Fit f = fit(x, xc, n);
  const Whitening white = cholesky_whitening(f.compressed);
  CrossGram target(kIn, kOut);
  target.add(xc.data(), t.data(), n);
  const Tensor m = fitted_weight(white, target);
  std::vector<double> design(xc.begin(), xc.begin() + n * kIn), want(t.begin(), t.end());
  ASSERT_EQ(LAPACKE_dgels(LAPACK_ROW_MAJOR, 'N', n, kIn, kOut, design.data(), kIn, want.data(), kOut), 0);
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t i = 0; i < kIn; ++i)
      EXPECT_NEAR(m.data()[o * kIn + i], want[i * kOut + o], 1e-3 * (1 + std::abs(want[i * kOut + o])));
  // With the dense outputs as the target it is compensated_weight.
  const std::vector<double> y = times_transposed(x, 0, n, w);
  const std::vector<float> outputs(y.begin(), y.end());
  CrossGram dense_outputs(kIn, kOut);
  dense_outputs.add(xc.data(), outputs.data(), n);
  const Tensor a = fitted_weight(white, dense_outputs), b = compensated_weight(w, white, f.cross);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data()[i], b.data()[i], 1e-3 * (1 + std::abs(b.data()[i])));
}

// Fitted to the residual, the linear also cancels the error the residual
// carries: on held-out rows the residual after its add is closer to the
// dense one than with the fit to the dense layer's output.
TEST(Refit, ResidualFitReducesTheResidualErrorOnHeldOutRows) {
  const int64_t n = 1000, fitted = 900;
  const std::vector<float> x = activations(n, 15), xc = distorted(x, n, 16);
  const Tensor w = weight();
  const std::vector<float> t = residual_target(x, n, w, 17);
  const Fit f = fit(x, xc, fitted);
  const Whitening white = cholesky_whitening(f.compressed, 1e-3);
  CrossGram target(kIn, kOut);
  target.add(xc.data(), t.data(), fitted);
  const LowRank to_outputs = whitened_low_rank(compensated_weight(w, white, f.cross), white, kRank);
  const LowRank to_residual = whitened_low_rank(fitted_weight(white, target), white, kRank);
  const double before = residual_error(t, xc, fitted, n, to_outputs);
  const double after = residual_error(t, xc, fitted, n, to_residual);
  std::printf("held-out residual error: fit to the outputs %.4f, to the residual %.4f\n", before, after);
  EXPECT_LT(after, 0.9 * before);
}

TEST(Refit, RejectsMismatchedShapes) {
  const Tensor w = weight();
  const Fit f = fit(activations(50, 6), activations(50, 6), 50);
  const Whitening white = cholesky_whitening(f.compressed);
  EXPECT_THROW(compensated_weight(w, white, CrossGram(kIn + 1, kIn + 1)), Error);
  EXPECT_THROW(compensated_weight(Tensor({kOut, kIn + 1}), white, f.cross), Error);
  EXPECT_THROW(compensated_weight(w, Whitening::identity(kIn), f.cross), Error);
  EXPECT_THROW(compensated_weight(w, white, CrossGram(kIn, kOut)), Error);
  EXPECT_THROW(fitted_weight(white, CrossGram(kIn + 1, kOut)), Error);
  EXPECT_THROW(fitted_weight(Whitening::identity(kIn), CrossGram(kIn, kOut)), Error);
}

}  // namespace
}  // namespace fsvd
