#include "backends/cpu/linear_ops.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/pack_cache.h"
#include "testing/random_model.h"

namespace fsvd::cpu {
namespace {

using testing::random_normal;

Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(shape);
  const std::vector<float> v = random_normal(t.numel(), seed);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

Linear make_linear(int64_t out, int64_t in, int64_t rank, bool bias, uint64_t seed) {
  Linear l;
  l.first = random_tensor({rank ? rank : out, in}, seed);
  if (rank) l.second = random_tensor({out, rank}, seed + 1);
  if (bias) l.bias = random_tensor({out}, seed + 2);
  return l;
}

// y[n, out] = l(x) in double with plain loops.
std::vector<double> reference(const Linear& l, const std::vector<float>& x, int64_t n) {
  const int64_t in = l.in(), mid = l.first.dim(0), out = l.out();
  std::vector<double> t(n * mid), y(n * out, 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < mid; ++j) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += double(l.first.data()[j * in + i]) * x[r * in + i];
      t[r * mid + j] = s;
    }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      if (l.low_rank()) {
        for (int64_t j = 0; j < mid; ++j) s += double(l.second.data()[o * mid + j]) * t[r * mid + j];
      } else {
        s = t[r * mid + o];
      }
      y[r * out + o] = s + (l.bias.empty() ? 0.0 : l.bias.data()[o]);
    }
  return y;
}

struct Case {
  int64_t n, out, in, rank;
  bool bias, accumulate;
};

class CpuLinear : public ::testing::TestWithParam<Case> {};

TEST_P(CpuLinear, ApplyMatchesPlainLoops) {
  const Case c = GetParam();
  const Linear l = make_linear(c.out, c.in, c.rank, c.bias, 21);
  const std::vector<float> x = random_normal(c.n * c.in, 22);
  const int64_t ldy = c.out + 2;  // padding columns must stay untouched
  const std::vector<float> y0 = random_normal(c.n * ldy, 23);
  std::vector<float> y = y0, scratch;
  apply_linear(l, x.data(), c.n, y.data(), ldy, c.accumulate, scratch);
  const std::vector<double> want = reference(l, x, c.n);
  for (int64_t r = 0; r < c.n; ++r) {
    for (int64_t o = 0; o < c.out; ++o) {
      const double w = want[r * c.out + o] + (c.accumulate ? y0[r * ldy + o] : 0.0);
      EXPECT_NEAR(y[r * ldy + o], w, 1e-4) << r << "," << o;
    }
    for (int64_t o = c.out; o < ldy; ++o) EXPECT_EQ(y[r * ldy + o], y0[r * ldy + o]);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuLinear,
                         ::testing::Values(Case{1, 13, 17, 0, false, false},  // dense GEMV
                                           Case{6, 13, 17, 0, true, false},   // dense GEMM + bias
                                           Case{1, 29, 19, 5, true, true},    // low-rank GEMV, residual
                                           Case{9, 29, 19, 7, false, true},   // low-rank GEMM, residual
                                           Case{5, 11, 23, 3, true, false}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return "n" + std::to_string(c.n) + "_out" + std::to_string(c.out) + "_in" +
                                  std::to_string(c.in) + "_rank" + std::to_string(c.rank) +
                                  (c.bias ? "_bias" : "") + (c.accumulate ? "_residual" : "");
                         });

TEST(CpuPackedLinear, PartsMatchSeparateLinears) {
  // q|k|v-like: low-rank rank 5 with bias, dense, low-rank rank 3.
  const int64_t in = 19;
  const Linear a = make_linear(24, in, 5, true, 31);
  const Linear b = make_linear(8, in, 0, false, 41);
  const Linear c = make_linear(8, in, 3, true, 51);
  PackCache cache;
  const PackedLinear p = pack_linears({&a, &b, &c}, cache);
  for (int64_t n : {1, 7}) {
    const std::vector<float> x = random_normal(n * in, 61 + n);
    const int64_t lda = 24, ldb = 8 + 4, ldc = 8;  // b lands in a wider buffer
    std::vector<float> ya(n * lda), yb(n * ldb, -7.0f), yc(n * ldc), scratch;
    const OutSlot outs[] = {{ya.data(), lda}, {yb.data(), ldb}, {yc.data(), ldc}};
    apply_packed(p, x.data(), n, outs, scratch);
    const Linear* lins[] = {&a, &b, &c};
    const std::vector<float>* ys[] = {&ya, &yb, &yc};
    const int64_t lds[] = {lda, ldb, ldc};
    for (int part = 0; part < 3; ++part) {
      const std::vector<double> want = reference(*lins[part], x, n);
      const int64_t out = lins[part]->out();
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < out; ++o)
          EXPECT_NEAR((*ys[part])[r * lds[part] + o], want[r * out + o], 1e-4)
              << "part " << part << " row " << r << " col " << o;
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 8; o < ldb; ++o) EXPECT_EQ(yb[r * ldb + o], -7.0f);
  }
}

}  // namespace
}  // namespace fsvd::cpu
