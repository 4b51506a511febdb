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

CrossGram::CrossGram(int64_t dim) : dim_(dim), values_(dim * dim, 0.0) {}

void CrossGram::add(const float* compressed_rows, const float* dense_rows, int64_t n) {
  // fp64 products, as Gram's: M* solves against C, so both must carry the same precision.
  const int d = static_cast<int>(dim_);
  for (int64_t begin = 0; begin < n; begin += kChunkRows) {
    const int64_t count = std::min(kChunkRows, n - begin);
    compressed_.assign(compressed_rows + begin * dim_, compressed_rows + (begin + count) * dim_);
    dense_.assign(dense_rows + begin * dim_, dense_rows + (begin + count) * dim_);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, static_cast<int>(count), 1.0, compressed_.data(), d,
                dense_.data(), d, 1.0, values_.data(), d);
  }
  rows_ += n;
}

Tensor compensated_weight(const Tensor& weight, const Whitening& white, const CrossGram& cross) {
  const char* where = "compensated_weight";
  check(weight.ndim() == 2, where, "weight ", weight.shape_str(), " is not a matrix");
  const int64_t out = weight.dim(0), in = weight.dim(1);
  check(white.dim == in && !white.lower.empty() && cross.dim() == in, where, "statistics of dimension ", white.dim,
        " and ", cross.dim(), " for a weight ", weight.shape_str());
  // (C + λI)·M*ᵀ = X'ᵀX·Wᵀ, [in, out] row-major: the cross statistics times Wᵀ, then the Cholesky solve.
  const int n_in = static_cast<int>(in), n_out = static_cast<int>(out);
  const std::vector<double> w(weight.data(), weight.data() + weight.numel());
  std::vector<double> rhs(in * out);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_in, n_out, n_in, 1.0, cross.values().data(), n_in, w.data(),
              n_in, 0.0, rhs.data(), n_out);
  const lapack_int info =
      LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', n_in, n_out, white.lower.data(), n_in, rhs.data(), n_out);
  check(info == 0, where, "dpotrs failed (info ", info, ") on ", weight.shape_str());
  Tensor result({out, in});
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) result.data()[o * in + i] = static_cast<float>(rhs[i * out + o]);
  return result;
}

}  // namespace fsvd
