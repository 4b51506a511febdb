#include "backends/cpu/linear_ops.h"

#include <cblas.h>

#include <cstring>

#include "core/error.h"

namespace fsvd::cpu {

void matmul_nt(const float* x, int64_t ldx, int64_t n, const Tensor& w, float* y, int64_t ldy,
               float beta) {
  const int out = static_cast<int>(w.dim(0)), in = static_cast<int>(w.dim(1));
  if (n == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, w.data(), in, x, 1, beta, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), out, in, 1.0f, x,
                static_cast<int>(ldx), w.data(), in, beta, y, static_cast<int>(ldy));
  }
}

static void add_bias(const Tensor& bias, int64_t n, float* y, int64_t ldy) {
  if (bias.empty()) return;
  const float* b = bias.data();
  const int64_t out = bias.dim(0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < out; ++j) y[r * ldy + j] += b[j];
}

void apply_linear(const Linear& l, const float* x, int64_t n, float* y, int64_t ldy,
                  bool accumulate, std::vector<float>& scratch) {
  const float beta = accumulate ? 1.0f : 0.0f;
  if (l.low_rank()) {
    const int64_t r = l.rank();
    scratch.resize(n * r);
    matmul_nt(x, l.in(), n, l.first, scratch.data(), r, 0.0f);
    matmul_nt(scratch.data(), r, n, l.second, y, ldy, beta);
  } else {
    matmul_nt(x, l.in(), n, l.first, y, ldy, beta);
  }
  add_bias(l.bias, n, y, ldy);
}

void apply_packed(const PackedLinear& p, const float* x, int64_t n, std::span<const OutSlot> outs,
                  std::vector<float>& scratch) {
  check(outs.size() == p.parts.size(), "apply_packed", outs.size(), " outputs for ",
        p.parts.size(), " parts");
  const int64_t total = p.first.dim(0);
  scratch.resize(n * total);
  matmul_nt(x, p.first.dim(1), n, p.first, scratch.data(), total, 0.0f);
  for (size_t i = 0; i < outs.size(); ++i) {
    const PackedLinear::Part& part = p.parts[i];
    const float* slice = scratch.data() + part.offset;
    if (!part.second.empty()) {
      matmul_nt(slice, total, n, part.second, outs[i].data, outs[i].ld, 0.0f);
    } else {
      for (int64_t r = 0; r < n; ++r)
        std::memcpy(outs[i].data + r * outs[i].ld, slice + r * total, sizeof(float) * part.rows);
    }
    add_bias(part.bias, n, outs[i].data, outs[i].ld);
  }
}

}  // namespace fsvd::cpu
