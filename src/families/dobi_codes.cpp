#include "families/dobi_codes.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fsvd {

namespace {

// torch.linspace(start, end, n) in fp32: start + step*i for the first half,
// end - step*(n-1-i) for the rest, each a fused multiply-add as torch's CPU kernel does.
std::vector<float> linspace(float start, float end, int n) {
  const float step = (end - start) / static_cast<float>(n - 1);
  std::vector<float> out(n);
  for (int i = 0; i < n; ++i)
    out[i] = i < n / 2 ? std::fma(step, static_cast<float>(i), start)
                       : std::fma(-step, static_cast<float>(n - 1 - i), end);
  return out;
}

std::array<float, 256> build_table() {
  // 10^(e-6) as Python computes it (a double), scaled in fp32 as torch does.
  constexpr double kScales[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  std::vector<float> values;
  for (int e = 0; e < 7; ++e) {
    const std::vector<float> b = linspace(0.1f, 1.0f, (1 << e) + 1);
    const float scale = static_cast<float>(kScales[e]);
    for (size_t i = 0; i + 1 < b.size(); ++i) {
      const float v = scale * ((b[i] + b[i + 1]) / 2.0f);
      values.push_back(v);
      values.push_back(-v);
    }
  }
  values.push_back(0.0f);
  values.push_back(1.0f);
  std::array<float, 256> table{};
  std::copy(values.begin(), values.end(), table.begin());  // 2 * 127 + 2 = 256 values
  std::sort(table.begin(), table.end());
  return table;
}

}  // namespace

const std::array<float, 256>& dynamic_code_table() {
  static const std::array<float, 256> table = build_table();
  return table;
}

Tensor dequantize_rows(std::span<const uint8_t> codes, int64_t rows, int64_t cols, const float* absmax) {
  const std::array<float, 256>& code = dynamic_code_table();
  Tensor out({rows, cols});
  float* o = out.data();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) o[i * cols + j] = code[codes[i * cols + j]] * absmax[i];
  return out;
}

}  // namespace fsvd
