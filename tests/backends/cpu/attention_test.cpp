#include "backends/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "testing/random_model.h"

namespace fsvd::cpu {
namespace {

struct Case {
  int n_heads, n_kv_heads, head_dim, n, pos0;
};

class CpuAttention : public ::testing::TestWithParam<Case> {};

TEST_P(CpuAttention, MatchesPlainLoopsAndIgnoresRowsPastTheQuery) {
  const Case c = GetParam();
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  const int64_t ldq = q_dim + 3;
  const int valid = c.pos0 + c.n, rows = valid + 2;
  std::vector<float> q = testing::random_normal(c.n * ldq, 11);
  std::vector<float> k = testing::random_normal(rows * kv_dim, 12);
  std::vector<float> v = testing::random_normal(rows * kv_dim, 13);
  // Rows past the valid positions must never be read.
  for (int64_t i = valid * kv_dim; i < rows * kv_dim; ++i)
    k[i] = v[i] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out(c.n * q_dim);
  attention(q.data(), ldq, {k.data(), v.data(), kv_dim}, c.n, c.pos0, {c.n_heads, c.n_kv_heads, c.head_dim},
            out.data());

  const int group = c.n_heads / c.n_kv_heads;
  for (int i = 0; i < c.n; ++i) {
    for (int h = 0; h < c.n_heads; ++h) {
      const int kvh = h / group, len = c.pos0 + i + 1;
      std::vector<double> s(len);
      double mx = -1e300, sum = 0;
      for (int t = 0; t < len; ++t) {
        double dot = 0;
        for (int d = 0; d < c.head_dim; ++d)
          dot += double(q[i * ldq + h * c.head_dim + d]) * k[t * kv_dim + kvh * c.head_dim + d];
        s[t] = dot / std::sqrt(double(c.head_dim));
        mx = std::max(mx, s[t]);
      }
      for (double& x : s) sum += x = std::exp(x - mx);
      for (int d = 0; d < c.head_dim; ++d) {
        double want = 0;
        for (int t = 0; t < len; ++t) want += s[t] / sum * v[t * kv_dim + kvh * c.head_dim + d];
        EXPECT_NEAR(out[i * q_dim + h * c.head_dim + d], want, 1e-5)
            << "row " << i << " head " << h << " dim " << d;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Case{4, 4, 8, 5, 0},     // MHA, prefill from 0
                                           Case{6, 2, 16, 7, 4},    // GQA 3, prefill after a prefix
                                           Case{8, 2, 8, 1, 9},     // GQA 4, decode
                                           Case{3, 1, 10, 3, 2}),   // MQA
                         [](const auto& info) {
                           const Case& c = info.param;
                           return "heads" + std::to_string(c.n_heads) + "_kv" + std::to_string(c.n_kv_heads) +
                                  "_dim" + std::to_string(c.head_dim) + "_n" + std::to_string(c.n) + "_pos" +
                                  std::to_string(c.pos0);
                         });

// The same sequence scattered over the blocks of a pool in shuffled order
// gives the same output as its dense cache, bit for bit (same sums, same order).
TEST(CpuAttention, PagedCacheMatchesDense) {
  const HeadShape shape{8, 2, 16};
  const int64_t q_dim = 8 * 16, kv_dim = 2 * 16;
  const int block = 4, n = 3, pos0 = 11, len = pos0 + n;  // 14 positions over 4 blocks
  const std::vector<int32_t> blocks = {5, 0, 3, 6};
  std::vector<float> q = testing::random_normal(n * q_dim, 21);
  std::vector<float> k = testing::random_normal(len * kv_dim, 22);
  std::vector<float> v = testing::random_normal(len * kv_dim, 23);
  std::vector<float> kp(7 * block * kv_dim, std::numeric_limits<float>::quiet_NaN()), vp = kp;
  for (int t = 0; t < len; ++t) {
    const int64_t row = int64_t{blocks[t / block]} * block + t % block;
    std::copy_n(k.begin() + t * kv_dim, kv_dim, kp.begin() + row * kv_dim);
    std::copy_n(v.begin() + t * kv_dim, kv_dim, vp.begin() + row * kv_dim);
  }
  std::vector<float> dense(n * q_dim), paged(n * q_dim);
  attention(q.data(), q_dim, {k.data(), v.data(), kv_dim}, n, pos0, shape, dense.data());
  attention(q.data(), q_dim, {kp.data(), vp.data(), kv_dim, blocks.data(), block}, n, pos0, shape, paged.data());
  EXPECT_EQ(paged, dense);
}

// An encoder's rows attend to the whole sequence: each equals a causal query placed last.
TEST(CpuAttention, NonCausalRowsSeeTheWholeSequence) {
  const int n = 6, heads = 2, hd = 8;
  const int64_t dim = heads * hd;
  const std::vector<float> q = testing::random_normal(n * dim, 21), k = testing::random_normal(n * dim, 22),
                           v = testing::random_normal(n * dim, 23);
  const KvView kv{k.data(), v.data(), dim};
  std::vector<float> all(n * dim), one(dim);
  attention(q.data(), dim, kv, n, 0, {heads, heads, hd}, all.data(), /*causal=*/false);
  for (int i = 0; i < n; ++i) {
    attention(q.data() + i * dim, dim, kv, 1, n - 1, {heads, heads, hd}, one.data());
    for (int64_t d = 0; d < dim; ++d) EXPECT_FLOAT_EQ(all[i * dim + d], one[d]) << i;
  }
}

}  // namespace
}  // namespace fsvd::cpu
