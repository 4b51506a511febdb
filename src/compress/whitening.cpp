#include "compress/whitening.h"

// The C++ complex type for LAPACKE's complex routines (unused here) keeps
// <complex.h>'s C99 macros out of C++.
#define LAPACK_COMPLEX_CPP
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace fsvd {
namespace {

// Rows converted to fp64 per syrk call: bounds the conversion buffer.
constexpr int64_t kGramChunkRows = 256;

// W as fp64 [out, in], times L when whitening.
std::vector<double> whitened_weight(const Tensor& weight, const Whitening& white, const char* where) {
  check(weight.ndim() == 2 && weight.dim(1) == white.dim, where, "weight ", weight.shape_str(),
        " does not match a whitening of dimension ", white.dim);
  const int64_t out = weight.dim(0), in = weight.dim(1);
  std::vector<double> a(weight.data(), weight.data() + weight.numel());
  if (!white.lower.empty())
    cblas_dtrmm(CblasRowMajor, CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, static_cast<int>(out),
                static_cast<int>(in), 1.0, white.lower.data(), static_cast<int>(in), a.data(),
                static_cast<int>(in));
  return a;
}

// In-place Cholesky of the lower triangle of a [dim, dim] row-major matrix; false if not positive definite.
bool cholesky_in_place(std::vector<double>& a, int64_t dim) {
  const lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', static_cast<lapack_int>(dim), a.data(),
                                         static_cast<lapack_int>(dim));
  check(info >= 0, "cholesky_whitening", "dpotrf rejected argument ", -info);
  return info == 0;
}

double smallest_eigenvalue(std::vector<double> a, int64_t dim) {
  std::vector<double> w(dim);
  const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'L', static_cast<lapack_int>(dim), a.data(),
                                         static_cast<lapack_int>(dim), w.data());
  check(info == 0, "cholesky_whitening", "eigenvalue solver dsyevd failed (info ", info, ")");
  return w.front();  // ascending
}

}  // namespace

Gram::Gram(int64_t dim) : dim_(dim), lower_(dim * dim, 0.0) {}

Gram::Gram(int64_t dim, int64_t rows, std::vector<double> lower) : dim_(dim), rows_(rows), lower_(std::move(lower)) {
  check(static_cast<int64_t>(lower_.size()) == dim * dim, "Gram", lower_.size(), " values for dimension ", dim);
}

void Gram::add(const float* rows, int64_t n) {
  std::vector<double> chunk;
  for (int64_t begin = 0; begin < n; begin += kGramChunkRows) {
    const int64_t count = std::min(kGramChunkRows, n - begin);
    chunk.assign(rows + begin * dim_, rows + (begin + count) * dim_);
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, static_cast<int>(dim_), static_cast<int>(count), 1.0,
                chunk.data(), static_cast<int>(dim_), 1.0, lower_.data(), static_cast<int>(dim_));
  }
  rows_ += n;
}

Whitening cholesky_whitening(const Gram& gram, double ridge) {
  check(ridge >= 0, "cholesky_whitening", "ridge must be non-negative, got ", ridge);
  const int64_t dim = gram.dim();
  double trace = 0;
  for (int64_t i = 0; i < dim; ++i) trace += gram.lower()[i * dim + i];
  const double mean_diagonal = trace > 0 ? trace / static_cast<double>(dim) : 1.0;
  std::vector<double> regularized = gram.lower();
  for (int64_t i = 0; i < dim; ++i) regularized[i * dim + i] += ridge * mean_diagonal;
  Whitening white{dim, regularized, 0.0};
  if (cholesky_in_place(white.lower, dim)) return white;

  const double eps = 1e-6 * mean_diagonal;
  const double base = std::max(0.0, -smallest_eigenvalue(regularized, dim));
  for (int attempt = 0; attempt < 4; ++attempt) {
    white.shift = base + eps * std::pow(10.0, attempt);
    white.lower = regularized;
    for (int64_t i = 0; i < dim; ++i) white.lower[i * dim + i] += white.shift;
    if (cholesky_in_place(white.lower, dim)) return white;
  }
  fail("cholesky_whitening", "the ", dim, "x", dim, " input statistics stay indefinite after a diagonal shift of ",
       white.shift, " (non-finite activations?)");
}

std::vector<double> whitened_singular_values(const Tensor& weight, const Whitening& white) {
  std::vector<double> a = whitened_weight(weight, white, "whitened_singular_values");
  const int64_t out = weight.dim(0), in = weight.dim(1);
  std::vector<double> s(std::min(out, in));
  const lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'N', static_cast<lapack_int>(out),
                                         static_cast<lapack_int>(in), a.data(), static_cast<lapack_int>(in),
                                         s.data(), nullptr, static_cast<lapack_int>(s.size()), nullptr,
                                         static_cast<lapack_int>(in));
  check(info == 0, "whitened_singular_values", "dgesdd failed (info ", info, ") on ", weight.shape_str());
  return s;
}

LowRank whitened_low_rank(const Tensor& weight, const Whitening& white, int64_t rank) {
  const char* where = "whitened_low_rank";
  std::vector<double> a = whitened_weight(weight, white, where);
  const int64_t out = weight.dim(0), in = weight.dim(1), k = std::min(out, in);
  check(rank >= 1 && rank <= k, where, "rank ", rank, " outside [1, ", k, "] for ", weight.shape_str());
  std::vector<double> s(k), u(out * k), vt(k * in);
  const lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', static_cast<lapack_int>(out),
                                         static_cast<lapack_int>(in), a.data(), static_cast<lapack_int>(in),
                                         s.data(), u.data(), static_cast<lapack_int>(k), vt.data(),
                                         static_cast<lapack_int>(in));
  check(info == 0, where, "dgesdd failed (info ", info, ") on ", weight.shape_str());

  // first = sqrt(S_r)·V_rᵀ·L⁻¹: solve Z·L = V_rᵀ for the top r rows of Vᵀ.
  vt.resize(rank * in);
  if (!white.lower.empty())
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, static_cast<int>(rank),
                static_cast<int>(in), 1.0, white.lower.data(), static_cast<int>(in), vt.data(),
                static_cast<int>(in));
  LowRank lr{Tensor({rank, in}), Tensor({out, rank}), std::move(s)};
  for (int64_t i = 0; i < rank; ++i) {
    const double root = std::sqrt(lr.singular_values[i]);
    for (int64_t j = 0; j < in; ++j) lr.first.data()[i * in + j] = static_cast<float>(root * vt[i * in + j]);
    for (int64_t o = 0; o < out; ++o) lr.second.data()[o * rank + i] = static_cast<float>(root * u[o * k + i]);
  }
  return lr;
}

double truncation_loss(const std::vector<double>& s, int64_t rank) {
  double kept = 0, all = 0;
  for (size_t i = 0; i < s.size(); ++i) (static_cast<int64_t>(i) < rank ? kept : all) += s[i] * s[i];
  all += kept;
  return all > 0 ? std::sqrt((all - kept) / all) : 0.0;
}

}  // namespace fsvd
