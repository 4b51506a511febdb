#include "backends/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"

namespace fsvd::cpu {

// Below this much work a parallel region costs more than it saves.
constexpr int64_t kParallelMin = 1 << 14;

void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out) {
#pragma omp parallel for schedule(static) if (n * dim >= kParallelMin)
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * dim;
    float* yr = out + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(dim)) + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = w[i] * (xr[i] * inv);
  }
}

void rope(float* x, int64_t n, int64_t ld, int n_heads, int head_dim, int pos0,
          const float* inv_freq) {
  const int half = head_dim / 2;
#pragma omp parallel for schedule(static) if (n * n_heads * head_dim >= kParallelMin)
  for (int64_t r = 0; r < n; ++r) {
    // One cos/sin per pair and row, shared by all heads.
    std::vector<float> cs(half), sn(half);
    const float p = static_cast<float>(pos0 + r);
    for (int j = 0; j < half; ++j) {
      const float angle = p * inv_freq[j];
      cs[j] = std::cos(angle);
      sn[j] = std::sin(angle);
    }
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + r * ld + static_cast<int64_t>(h) * head_dim;
      for (int j = 0; j < half; ++j) {
        const float a = v[j], b = v[j + half];
        v[j] = a * cs[j] - b * sn[j];
        v[j + half] = b * cs[j] + a * sn[j];
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, int64_t count, float* out) {
#pragma omp parallel for schedule(static) if (count >= kParallelMin)
  for (int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void layernorm(const float* x, const float* w, const float* b, int64_t n, int64_t dim, float eps, float* out) {
#pragma omp parallel for schedule(static) if (n * dim >= kParallelMin)
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * dim;
    float* yr = out + r * dim;
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(dim);
    for (int64_t i = 0; i < dim; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] - m) * inv * w[i] + b[i];
  }
}

void gelu(float* x, int64_t count) {
#pragma omp parallel for schedule(static) if (count >= kParallelMin)
  for (int64_t i = 0; i < count; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void l2_normalize(float* x, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::max(std::sqrt(ss), 1e-12));
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax(float* x, int64_t n) {
  const float mx = *std::max_element(x, x + n);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void round_e4m3(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = e4m3_to_f32(f32_to_e4m3(x[i]));
}

}  // namespace fsvd::cpu
