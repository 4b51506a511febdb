#include "families/rope_layout.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/fails_with.h"
#include "family_test_util.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using test::fails_with;

Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(shape);
  const std::vector<float> v = testing::random_normal(t.numel(), seed);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

TEST(RopeLayout, ReordersRowsWithinEachHead) {
  // 2 heads of 4 rows, 2 columns: row r holds (r, -r).
  Tensor w({8, 2});
  for (int r = 0; r < 8; ++r) w.data()[2 * r] = r, w.data()[2 * r + 1] = -r;
  const Tensor out = interleaved_to_half_rope_rows(w, 2, "w");
  const int want[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(out.data()[2 * r], want[r]) << r;
    EXPECT_EQ(out.data()[2 * r + 1], -want[r]) << r;
  }
  EXPECT_NE(out.storage_id(), w.storage_id());
  const Tensor bias = interleaved_to_half_rope_rows(Tensor({6}, {0, 1, 2, 3, 4, 5}), 1, "bias");
  EXPECT_EQ(std::vector<float>(bias.data(), bias.data() + 6), (std::vector<float>{0, 2, 4, 1, 3, 5}));
}

TEST(RopeLayout, UndoesLlamaCppPermutation) {
  const Tensor w = random_tensor({3 * 10, 7}, 3);
  const Tensor back = interleaved_to_half_rope_rows(test::hf_to_interleaved_rows(w, 3), 3, "w");
  EXPECT_EQ(std::vector<float>(back.data(), back.data() + back.numel()),
            std::vector<float>(w.data(), w.data() + w.numel()));
}

// RoPE on one head vector at position `pos`, pairing dimensions (2i, 2i+1)
// or, for rotate_half, (i, i + d/2); pair i turns by pos * theta^(-2i/d).
std::vector<double> rope(std::vector<double> v, int pos, bool interleaved) {
  const size_t d = v.size(), half = d / 2;
  for (size_t i = 0; i < half; ++i) {
    const double angle = pos * std::pow(10000.0, -2.0 * i / d);
    const size_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    const double x = v[a], y = v[b];
    v[a] = x * std::cos(angle) - y * std::sin(angle);
    v[b] = x * std::sin(angle) + y * std::cos(angle);
  }
  return v;
}

// Attention score of q head `h` at position m against its kv head at position n.
double score(const Tensor& wq, const Tensor& wk, int heads, int kv_heads, int head_dim, const Tensor& x,
             const Tensor& y, int h, int m, int n, bool interleaved) {
  const int64_t in = wq.dim(1);
  auto project = [&](const Tensor& w, int head, const Tensor& v) {
    std::vector<double> out(head_dim);
    for (int r = 0; r < head_dim; ++r) {
      for (int64_t c = 0; c < in; ++c)
        out[r] += double(w.data()[(head * head_dim + r) * in + c]) * v.data()[c];
    }
    return out;
  };
  const std::vector<double> q = rope(project(wq, h, x), m, interleaved);
  const std::vector<double> k = rope(project(wk, h / (heads / kv_heads), y), n, interleaved);
  double s = 0;
  for (int i = 0; i < head_dim; ++i) s += q[i] * k[i];
  return s;
}

TEST(RopeLayout, AttentionScoresUnchanged) {
  const int heads = 6, kv_heads = 2, head_dim = 10, in = 13;
  const Tensor wq = random_tensor({heads * head_dim, in}, 1),
               wk = random_tensor({kv_heads * head_dim, in}, 2);
  const Tensor x = random_tensor({in}, 3), y = random_tensor({in}, 4);
  const Tensor hq = interleaved_to_half_rope_rows(wq, heads, "q"),
               hk = interleaved_to_half_rope_rows(wk, kv_heads, "k");
  for (int h = 0; h < heads; ++h) {
    const double meta = score(wq, wk, heads, kv_heads, head_dim, x, y, h, 17, 5, true);
    const double hf = score(hq, hk, heads, kv_heads, head_dim, x, y, h, 17, 5, false);
    EXPECT_NEAR(hf, meta, 1e-9 * (1 + std::fabs(meta))) << "head " << h;
    // Without the reorder the two conventions disagree.
    EXPECT_GT(std::fabs(score(wq, wk, heads, kv_heads, head_dim, x, y, h, 17, 5, false) - meta), 1e-3);
  }
}

TEST(RopeLayout, RejectsRowsThatDoNotSplitIntoEvenHeads) {
  EXPECT_TRUE(fails_with(
      [] {
        interleaved_to_half_rope_rows(Tensor({9, 2}), 3, "blk.0.attn_q");
      },
      "blk.0.attn_q: cannot split 9 rows into 3 heads"));
  EXPECT_TRUE(fails_with(
      [] {
        interleaved_to_half_rope_rows(Tensor({8, 2}), 3, "q");
      },
      "8 rows into 3 heads"));
  EXPECT_TRUE(fails_with([] { interleaved_to_half_rope_rows(Tensor({8, 2}), 0, "q"); }, "into 0 heads"));
  EXPECT_TRUE(fails_with([] { interleaved_to_half_rope_rows(Tensor({2, 2, 2}), 1, "q"); }, "1-D or 2-D"));
}

}  // namespace
}  // namespace fsvd
