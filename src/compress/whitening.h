#pragma once
// SVD-LLM's truncation-aware data whitening, in fp64 through LAPACK.
// A linear y = W·x reads calibration rows X [n, in]; with XᵀX = L·Lᵀ
// (Cholesky), ||X·(W - W')ᵀ||_F = ||(W - W')·L||_F, so truncating the SVD of
// W·L loses exactly the root-sum-square of its dropped singular values, and
// the truncation is the best rank-r fit measured on the calibration data.
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace fsvd {

// Running XᵀX of one linear input's rows, accumulated in fp64.
class Gram {
 public:
  explicit Gram(int64_t dim);
  // Statistics read back from a file (compress/gram_store.h), `lower` as lower() returns it.
  Gram(int64_t dim, int64_t rows, std::vector<double> lower);
  void add(const float* rows, int64_t n);  // rows [n, dim], row-major
  int64_t dim() const { return dim_; }
  int64_t rows() const { return rows_; }
  // [dim, dim] row-major; only the lower triangle is filled.
  const std::vector<double>& lower() const { return lower_; }

 private:
  int64_t dim_;
  int64_t rows_ = 0;
  std::vector<double> lower_;
};

// L with L·Lᵀ = XᵀX + shift·I, lower-triangular [dim, dim] row-major.
// An empty `lower` stands for L = I: plain SVD, no whitening.
struct Whitening {
  int64_t dim = 0;
  std::vector<double> lower;
  double shift = 0;  // > 0 when XᵀX was not positive definite

  static Whitening identity(int64_t dim) { return {dim, {}, 0}; }
};

// Cholesky factor of XᵀX + λI, λ = ridge × the mean diagonal (0: none). When
// that is not positive definite (an input direction the calibration never
// excites, or rounding), its diagonal is shifted further by max(0, -λmin) + ε,
// ε = 1e-6 × the mean diagonal, and the factorization retried with ε ×10 a few
// times; throws Error if it still fails. `shift` holds what was added beyond λ.
Whitening cholesky_whitening(const Gram& gram, double ridge = 0);

// Singular values of W·L, descending. `weight` is W [out, in] (fp32).
std::vector<double> whitened_singular_values(const Tensor& weight, const Whitening& white);

struct LowRank {
  Tensor first;                         // [rank, in]  = sqrt(S_r)·V_rᵀ·L⁻¹
  Tensor second;                        // [out, rank] = U_r·sqrt(S_r)
  std::vector<double> singular_values;  // all of W·L's, descending
};

// W ≈ second·first from the SVD W·L = U·S·Vᵀ truncated to `rank`, singular
// values split evenly between the factors and the whitening folded back into
// the first one by a triangular solve (no explicit inverse).
LowRank whitened_low_rank(const Tensor& weight, const Whitening& white, int64_t rank);

// sqrt(dropped σ² / all σ²) of a truncation of `singular_values` to `rank`:
// its relative loss on the calibration data (its plain relative Frobenius
// error without whitening).
double truncation_loss(const std::vector<double>& singular_values, int64_t rank);

}  // namespace fsvd
