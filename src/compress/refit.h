#pragma once
// Least-squares re-fit of a truncated factorization's second factor against
// the dense model (error compensation, after SVD-LLM's and GPTQ's sequential
// updates, in closed form). A linear y = W·x of the compressed model reads
// rows X' [n, in]; the dense model feeds the same tokens' rows X. With the
// first factor A [r, in] kept, the second factor B [out, r] minimizing
//   ||X·Wᵀ − X'·Aᵀ·Bᵀ||² + λ||B||²
// solves (A·C·Aᵀ + λI)·Bᵀ = A·M·Wᵀ, C = X'ᵀX', M = X'ᵀX: an r×r system.
// The target is the dense layer's output on the dense inputs, so B also
// undoes part of the error the compressed layers upstream put into X'.
#include <cstdint>
#include <vector>

#include "compress/whitening.h"
#include "core/tensor.h"

namespace fsvd {

// Running X'ᵀX [dim, dim] (row i: X' feature i) of two row sets of the same
// tokens, accumulated in fp64 from fp32 products of at most one call's rows.
class CrossGram {
 public:
  explicit CrossGram(int64_t dim);
  void add(const float* compressed_rows, const float* dense_rows, int64_t n);  // both [n, dim]
  int64_t dim() const { return dim_; }
  int64_t rows() const { return rows_; }
  const std::vector<double>& values() const { return values_; }

 private:
  int64_t dim_;
  int64_t rows_ = 0;
  std::vector<double> values_;
  std::vector<float> chunk_;
};

// The re-fitted second factor [out, rank] for `weight` W [out, in] and
// `first` A [rank, in]. `ridge` α sets λ = α·tr(A·C·Aᵀ)/rank (scale-free).
// Throws Error on mismatched shapes or a system that is not positive definite.
Tensor refit_second(const Tensor& weight, const Tensor& first, const Gram& compressed, const CrossGram& cross,
                    double ridge);

}  // namespace fsvd
