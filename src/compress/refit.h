#pragma once
// Error compensation against the dense model (after SVD-LLM's and GPTQ's
// sequential updates, in closed form). A linear y = W·x of the compressed
// model reads rows X' [n, in]; the dense model feeds the same tokens' rows X.
// The weight M minimizing
//   ||X·Wᵀ − X'·Mᵀ||² + λ||M||²
// is M* = W·Xᵀ·X'·(C + λI)⁻¹ with C = X'ᵀX' (the normal equations). Among
// rank-r weights the same objective is least at the SVD of M*·L truncated,
// L·Lᵀ = C + λI (reduced-rank regression: the objective is its value at M*
// plus ||(M* − M)·L||²), i.e. whitened_low_rank(M*, L, r). The target is the
// dense layer's output on the dense inputs, so the fit also undoes part of
// the error the compressed layers upstream put into X'.
#include <cstdint>
#include <vector>

#include "compress/whitening.h"
#include "core/tensor.h"

namespace fsvd {

// Running X'ᵀX [dim, dim] (row i: X' feature i) of two row sets of the same
// tokens, accumulated in fp64.
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
  std::vector<double> compressed_, dense_;  // one chunk of each, converted
};

// M* for `weight` W [out, in], given `white`: the Cholesky factor L of
// C + λI (cholesky_whitening of the compressed rows' statistics, with the
// ridge). Truncate it with whitened_low_rank(M*, white, r). Throws Error on
// mismatched shapes.
Tensor compensated_weight(const Tensor& weight, const Whitening& white, const CrossGram& cross);

}  // namespace fsvd
