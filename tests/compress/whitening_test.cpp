#include "compress/whitening.h"

#define LAPACK_COMPLEX_CPP
#include <gtest/gtest.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using Matrix = std::vector<double>;  // row-major

// Calibration rows [n, in] with correlated features of very different scales,
// as real activations have (a few outlier channels dominate).
std::vector<float> correlated_rows(int64_t n, int64_t in, uint64_t seed) {
  const std::vector<float> z = testing::random_normal(n * in, seed);
  const std::vector<float> mix = testing::random_normal(in * in, seed + 1);
  std::vector<float> x(n * in, 0.0f);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < in; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < in; ++t) acc += double(z[r * in + t]) * mix[t * in + j];
      x[r * in + j] = float(acc * (1.0 + 9.0 * (j % 5 == 0)));
    }
  return x;
}

Tensor random_weight(int64_t out, int64_t in, uint64_t seed) {
  return Tensor({out, in}, testing::random_normal(out * in, seed, 1.0f / std::sqrt(float(in))));
}

// second·first as fp64 [out, in].
Matrix product(const LowRank& lr) {
  const int64_t out = lr.second.dim(0), r = lr.first.dim(0), in = lr.first.dim(1);
  Matrix w(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < r; ++k)
      for (int64_t i = 0; i < in; ++i) w[o * in + i] += double(lr.second.data()[o * r + k]) * lr.first.data()[k * in + i];
  return w;
}

// ||X·(W - W')ᵀ||_F straight from the rows.
double output_error(const std::vector<float>& x, int64_t n, const Tensor& w, const Matrix& approx) {
  const int64_t out = w.dim(0), in = w.dim(1);
  double sum = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double d = 0;
      for (int64_t i = 0; i < in; ++i) d += double(x[r * in + i]) * (double(w.data()[o * in + i]) - approx[o * in + i]);
      sum += d * d;
    }
  return std::sqrt(sum);
}

double tail_rss(const std::vector<double>& s, int64_t rank) {
  double sum = 0;
  for (size_t i = rank; i < s.size(); ++i) sum += s[i] * s[i];
  return std::sqrt(sum);
}

// A·B for row-major fp64 matrices.
Matrix matmul(const Matrix& a, const Matrix& b, int64_t m, int64_t k, int64_t n) {
  Matrix c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + t] * b[t * n + j];
  return c;
}

Gram gram_of(const std::vector<float>& x, int64_t n, int64_t in) {
  Gram g(in);
  // Two uneven pieces: accumulation must not depend on how rows arrive.
  g.add(x.data(), n / 3);
  g.add(x.data() + (n / 3) * in, n - n / 3);
  return g;
}

TEST(Gram, AccumulatesXtXInFp64AcrossCalls) {
  const int64_t n = 700, in = 9;  // more rows than one internal chunk
  const std::vector<float> x = correlated_rows(n, in, 3);
  const Gram g = gram_of(x, n, in);
  EXPECT_EQ(g.rows(), n);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double want = 0;
      for (int64_t r = 0; r < n; ++r) want += double(x[r * in + i]) * x[r * in + j];
      EXPECT_NEAR(g.lower()[i * in + j], want, 1e-9 * std::abs(want) + 1e-9);
    }
}

TEST(Whitening, TruncationLossIsTheDroppedSingularValues) {
  const int64_t out = 12, in = 20, n = 300;
  const std::vector<float> x = correlated_rows(n, in, 5);
  const Tensor w = random_weight(out, in, 6);
  const Whitening white = cholesky_whitening(gram_of(x, n, in));
  EXPECT_EQ(white.shift, 0.0);
  const std::vector<double> s = whitened_singular_values(w, white);
  ASSERT_EQ(s.size(), size_t(out));
  EXPECT_TRUE(std::is_sorted(s.rbegin(), s.rend()));
  for (int64_t rank : {1, 4, 7, 11}) {
    const LowRank lr = whitened_low_rank(w, white, rank);
    EXPECT_EQ(lr.first.shape(), (std::vector<int64_t>{rank, in}));
    EXPECT_EQ(lr.second.shape(), (std::vector<int64_t>{out, rank}));
    for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(lr.singular_values[i], s[i], 1e-9 * s[0]);
    // fp32 factors: agreement to fp32 rounding of the whole output.
    EXPECT_NEAR(output_error(x, n, w, product(lr)), tail_rss(s, rank), 2e-6 * s[0]) << "rank " << rank;
  }
}

TEST(Whitening, IsTheBestRankRFitInTheWhitenedSpace) {
  const int64_t out = 10, in = 14, n = 200, rank = 4;
  const std::vector<float> x = correlated_rows(n, in, 8);
  const Tensor w = random_weight(out, in, 9);
  const Gram g = gram_of(x, n, in);
  const Whitening white = cholesky_whitening(g);

  // L·Lᵀ reproduces XᵀX.
  Matrix lt(in * in);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j < in; ++j) lt[i * in + j] = white.lower[j * in + i];
  const Matrix llt = matmul(white.lower, lt, in, in, in);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j <= i; ++j) EXPECT_NEAR(llt[i * in + j], g.lower()[i * in + j], 1e-9 * llt[0] * in);

  // Reference by another route: project W·L onto the top eigenvectors of (W·L)ᵀ(W·L).
  const Matrix wd(w.data(), w.data() + w.numel());
  const Matrix wl = matmul(wd, white.lower, out, in, in);
  Matrix wlt(in * out);
  for (int64_t i = 0; i < out; ++i)
    for (int64_t j = 0; j < in; ++j) wlt[j * out + i] = wl[i * in + j];
  Matrix ata = matmul(wlt, wl, in, out, in);
  std::vector<double> eig(in);
  ASSERT_EQ(LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', in, ata.data(), in, eig.data()), 0);
  Matrix proj(in * in, 0.0);  // Σ over the top `rank` eigenvectors (ascending order: the last columns)
  for (int64_t e = in - rank; e < in; ++e)
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < in; ++j) proj[i * in + j] += ata[i * in + e] * ata[j * in + e];
  const Matrix best = matmul(wl, proj, out, in, in);

  const Matrix got = matmul(product(whitened_low_rank(w, white, rank)), white.lower, out, in, in);
  double scale = 0;
  for (double v : wl) scale = std::max(scale, std::abs(v));
  for (int64_t i = 0; i < out * in; ++i) EXPECT_NEAR(got[i], best[i], 1e-5 * scale) << i;
}

TEST(Whitening, BeatsPlainSvdOnTheCalibrationData) {
  const int64_t out = 16, in = 24, n = 400, rank = 6;
  const std::vector<float> x = correlated_rows(n, in, 11);
  const Tensor w = random_weight(out, in, 12);
  const double whitened = output_error(x, n, w, product(whitened_low_rank(w, cholesky_whitening(gram_of(x, n, in)), rank)));
  const double plain = output_error(x, n, w, product(whitened_low_rank(w, Whitening::identity(in), rank)));
  EXPECT_LT(whitened, 0.9 * plain);
}

TEST(Whitening, PlainSvdIsTheBestFitOfTheWeight) {
  const int64_t out = 9, in = 7, rank = 3;
  const Tensor w = random_weight(out, in, 13);
  const std::vector<double> s = whitened_singular_values(w, Whitening::identity(in));
  ASSERT_EQ(s.size(), size_t(in));
  const Matrix approx = product(whitened_low_rank(w, Whitening::identity(in), rank));
  double err = 0;
  for (int64_t i = 0; i < out * in; ++i) err += std::pow(w.data()[i] - approx[i], 2);
  EXPECT_NEAR(std::sqrt(err), tail_rss(s, rank), 1e-6 * s[0]);
}

TEST(Whitening, RankDeficientStatisticsFallBackToAnEigenvalueShift) {
  // Fewer rows than inputs and one input that is never active: XᵀX is singular.
  const int64_t out = 8, in = 12, n = 6, dead = 5, rank = 3;
  std::vector<float> x = correlated_rows(n, in, 14);
  for (int64_t r = 0; r < n; ++r) x[r * in + dead] = 0.0f;
  const Gram g = gram_of(x, n, in);
  const Whitening white = cholesky_whitening(g);
  EXPECT_GT(white.shift, 0.0);
  double mean_diag = 0;
  for (int64_t i = 0; i < in; ++i) mean_diag += g.lower()[i * in + i] / in;
  EXPECT_LT(white.shift, 1e-3 * mean_diag);  // a nudge, not a different metric
  for (double v : white.lower) EXPECT_TRUE(std::isfinite(v));

  const Tensor w = random_weight(out, in, 15);
  const LowRank lr = whitened_low_rank(w, white, rank);
  for (int64_t i = 0; i < lr.first.numel(); ++i) ASSERT_TRUE(std::isfinite(lr.first.data()[i]));
  // The shift adds at most shift·||ΔW||² to the loss it minimizes.
  const double got = output_error(x, n, w, product(lr));
  const double bound = tail_rss(lr.singular_values, rank);
  EXPECT_LE(got, bound * (1 + 1e-6));
  EXPECT_GT(got, 0.99 * bound);
}

TEST(Whitening, RidgeIsAddedToTheDiagonalBeforeTheFactorization) {
  const int64_t n = 40, in = 7;
  const Gram g = gram_of(correlated_rows(n, in, 17), n, in);
  double mean_diag = 0;
  for (int64_t i = 0; i < in; ++i) mean_diag += g.lower()[i * in + i] / in;
  const Whitening white = cholesky_whitening(g, 0.1);
  EXPECT_EQ(white.shift, 0.0);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double llt = 0;
      for (int64_t t = 0; t <= j; ++t) llt += white.lower[i * in + t] * white.lower[j * in + t];
      const double want = g.lower()[i * in + j] + (i == j ? 0.1 * mean_diag : 0.0);
      EXPECT_NEAR(llt, want, 1e-9 * mean_diag) << i << "," << j;
    }
  EXPECT_THROW(cholesky_whitening(g, -0.1), Error);
}

TEST(Whitening, RejectsMismatchedShapesAndRanks) {
  const Tensor w = random_weight(4, 6, 16);
  EXPECT_THROW(whitened_low_rank(w, Whitening::identity(5), 2), Error);
  EXPECT_THROW(whitened_low_rank(w, Whitening::identity(6), 0), Error);
  EXPECT_THROW(whitened_low_rank(w, Whitening::identity(6), 5), Error);
}

}  // namespace
}  // namespace fsvd
