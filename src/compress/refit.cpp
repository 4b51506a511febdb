#include "compress/refit.h"

#define LAPACK_COMPLEX_CPP
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>

#include "core/error.h"

namespace fsvd {
namespace {

// Rows converted to fp64 per dgemm call: bounds the conversion buffers.
constexpr int64_t kChunkRows = 256;

}  // namespace

CrossGram::CrossGram(int64_t dim, int64_t cols) : dim_(dim), cols_(cols), values_(dim * cols, 0.0) {}

void CrossGram::add(const float* compressed_rows, const float* other_rows, int64_t n) {
  // fp64 products, as Gram's: M* solves against C, so both must carry the same precision.
  const int d = static_cast<int>(dim_), c = static_cast<int>(cols_);
  for (int64_t begin = 0; begin < n; begin += kChunkRows) {
    const int64_t count = std::min(kChunkRows, n - begin);
    compressed_.assign(compressed_rows + begin * dim_, compressed_rows + (begin + count) * dim_);
    other_.assign(other_rows + begin * cols_, other_rows + (begin + count) * cols_);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, c, static_cast<int>(count), 1.0, compressed_.data(), d,
                other_.data(), c, 1.0, values_.data(), c);
  }
  rows_ += n;
}

namespace {

// Solves (C + λI)·Mᵀ = rhs [in, out] row-major with white's Cholesky factor; returns M [out, in].
Tensor solve(const Whitening& white, std::vector<double> rhs, int64_t out, const char* where) {
  const int64_t in = white.dim;
  const lapack_int info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', static_cast<int>(in), static_cast<int>(out),
                                         white.lower.data(), static_cast<int>(in), rhs.data(), static_cast<int>(out));
  check(info == 0, where, "dpotrs failed (info ", info, ") on [", out, ", ", in, "]");
  Tensor result({out, in});
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) result.data()[o * in + i] = static_cast<float>(rhs[i * out + o]);
  return result;
}

}  // namespace

Tensor compensated_weight(const Tensor& weight, const Whitening& white, const CrossGram& cross) {
  const char* where = "compensated_weight";
  check(weight.ndim() == 2, where, "weight ", weight.shape_str(), " is not a matrix");
  const int64_t out = weight.dim(0), in = weight.dim(1);
  check(white.dim == in && !white.lower.empty() && cross.dim() == in && cross.cols() == in, where,
        "statistics of dimension ", white.dim, " and ", cross.dim(), "x", cross.cols(), " for a weight ",
        weight.shape_str());
  // X'ᵀX·Wᵀ = X'ᵀ(dense outputs), [in, out] row-major.
  const int n_in = static_cast<int>(in), n_out = static_cast<int>(out);
  const std::vector<double> w(weight.data(), weight.data() + weight.numel());
  std::vector<double> rhs(in * out);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_in, n_out, n_in, 1.0, cross.values().data(), n_in, w.data(),
              n_in, 0.0, rhs.data(), n_out);
  return solve(white, std::move(rhs), out, where);
}

Tensor fitted_weight(const Whitening& white, const CrossGram& target) {
  check(white.dim == target.dim() && !white.lower.empty(), "fitted_weight", "statistics of dimension ", white.dim,
        " for a target cross of ", target.dim(), "x", target.cols());
  return solve(white, target.values(), target.cols(), "fitted_weight");
}

}  // namespace fsvd
