#include "compress/refit.h"

#define LAPACK_COMPLEX_CPP
#include <cblas.h>
#include <lapacke.h>

#include "core/error.h"

namespace fsvd {

CrossGram::CrossGram(int64_t dim) : dim_(dim), values_(dim * dim, 0.0) {}

void CrossGram::add(const float* compressed_rows, const float* dense_rows, int64_t n) {
  // One sgemm per call (a calibration window): fp32 sums of a window's products, fp64 across windows.
  chunk_.resize(dim_ * dim_);
  const int d = static_cast<int>(dim_);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, static_cast<int>(n), 1.0f, compressed_rows, d,
              dense_rows, d, 0.0f, chunk_.data(), d);
  for (int64_t i = 0; i < dim_ * dim_; ++i) values_[i] += chunk_[i];
  rows_ += n;
}

Tensor refit_second(const Tensor& weight, const Tensor& first, const Gram& compressed, const CrossGram& cross,
                    double ridge) {
  const char* where = "refit_second";
  check(weight.ndim() == 2 && first.ndim() == 2 && first.dim(1) == weight.dim(1), where, "weight ",
        weight.shape_str(), " and first factor ", first.shape_str(), " do not match");
  const int64_t out = weight.dim(0), in = weight.dim(1), rank = first.dim(0);
  check(compressed.dim() == in && cross.dim() == in, where, "statistics of dimension ", compressed.dim(), " and ",
        cross.dim(), " for a weight ", weight.shape_str());
  check(ridge >= 0, where, "ridge must be non-negative, got ", ridge);
  const int r = static_cast<int>(rank), n_in = static_cast<int>(in), n_out = static_cast<int>(out);
  const std::vector<double> a(first.data(), first.data() + first.numel());
  const std::vector<double> w(weight.data(), weight.data() + weight.numel());

  // System matrix A·C·Aᵀ [r, r] (C symmetric, lower triangle stored).
  std::vector<double> ac(rank * in), system(rank * rank);
  cblas_dsymm(CblasRowMajor, CblasRight, CblasLower, r, n_in, 1.0, compressed.lower().data(), n_in, a.data(), n_in,
              0.0, ac.data(), n_in);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, r, n_in, 1.0, ac.data(), n_in, a.data(), n_in, 0.0,
              system.data(), r);
  // Right-hand side A·M·Wᵀ [r, out].
  std::vector<double> am(rank * in), rhs(rank * out);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, n_in, n_in, 1.0, a.data(), n_in, cross.values().data(),
              n_in, 0.0, am.data(), n_in);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, n_out, n_in, 1.0, am.data(), n_in, w.data(), n_in, 0.0,
              rhs.data(), n_out);

  double trace = 0;
  for (int64_t i = 0; i < rank; ++i) trace += system[i * rank + i];
  const double lambda = ridge * trace / static_cast<double>(rank);
  for (int64_t i = 0; i < rank; ++i) system[i * rank + i] += lambda;
  const lapack_int info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', r, n_out, system.data(), r, rhs.data(), n_out);
  check(info == 0, where, "the rank-", rank, " system of ", weight.shape_str(),
        " is not positive definite (dposv info ", info, "); raise the ridge");

  Tensor second({out, rank});
  for (int64_t i = 0; i < rank; ++i)
    for (int64_t o = 0; o < out; ++o) second.data()[o * rank + i] = static_cast<float>(rhs[i * out + o]);
  return second;
}

}  // namespace fsvd
