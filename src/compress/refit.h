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
//
// A linear that adds into the residual stream (o, down) can instead be fitted
// to the residual itself: with T = (dense residual after the add) − (compressed
// residual before it), min ||T − X'·Mᵀ||² + λ||M||² has M* = Tᵀ·X'·(C + λI)⁻¹,
// truncated the same way. Its output then also cancels the error the residual
// stream already carries, which a fit to the dense layer's output leaves in.
#include <cstdint>
#include <vector>

#include "compress/whitening.h"
#include "core/tensor.h"

namespace fsvd {

// Running X'ᵀY [dim, cols] (row i: X' feature i) of two row sets of the same
// tokens, X' [n, dim] and Y [n, cols] (the dense rows X, or a target T),
// accumulated in fp64.
class CrossGram {
 public:
  CrossGram(int64_t dim, int64_t cols);
  void add(const float* compressed_rows, const float* other_rows, int64_t n);  // [n, dim] and [n, cols]
  int64_t dim() const { return dim_; }
  int64_t cols() const { return cols_; }
  int64_t rows() const { return rows_; }
  const std::vector<double>& values() const { return values_; }

 private:
  int64_t dim_, cols_;
  int64_t rows_ = 0;
  std::vector<double> values_;
  std::vector<double> compressed_, other_;  // one chunk of each, converted
};

// M* for `weight` W [out, in], given `white`: the Cholesky factor L of
// C + λI (cholesky_whitening of the compressed rows' statistics, with the
// ridge), and `cross` = X'ᵀX [in, in]. Truncate it with
// whitened_low_rank(M*, white, r). Throws Error on mismatched shapes.
Tensor compensated_weight(const Tensor& weight, const Whitening& white, const CrossGram& cross);

// M* [out, in] fitted to a target T [n, out] directly, given `target` = X'ᵀT
// [in, out] and `white` as above. Throws Error on mismatched shapes.
Tensor fitted_weight(const Whitening& white, const CrossGram& target);

}  // namespace fsvd
