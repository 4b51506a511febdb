#include "families/rope_layout.h"

#include <algorithm>

#include "core/error.h"

namespace fsvd {

Tensor interleaved_to_half_rope_rows(const Tensor& w, int64_t n_heads, const std::string& where) {
  check(w.ndim() == 1 || w.ndim() == 2, where, "RoPE row reorder needs a 1-D or 2-D tensor, got ",
        w.shape_str());
  const int64_t rows = w.dim(0);
  const int64_t row_len = w.ndim() == 2 ? w.dim(1) : 1;
  check(n_heads > 0 && rows % n_heads == 0 && (rows / n_heads) % 2 == 0, where, "cannot split ", rows,
        " rows into ", n_heads, " heads of even size for the RoPE row reorder");
  const int64_t head_dim = rows / n_heads, half = head_dim / 2;
  Tensor out(w.shape());
  const float* src = w.data();
  float* dst = out.data();
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t j = 0; j < half; ++j) {
      for (int64_t a = 0; a < 2; ++a) {
        const int64_t from = h * head_dim + 2 * j + a, to = h * head_dim + a * half + j;
        std::copy_n(src + from * row_len, row_len, dst + to * row_len);
      }
    }
  }
  return out;
}

}  // namespace fsvd
