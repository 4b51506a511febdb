// Synthetic architectures: the SVD-LLM rank rule, deterministic bf16-exact
// values, and models that validate.
#include "model/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/dtype.h"
#include "model/encoder.h"
#include "model/model.h"
#include "testing/fails_with.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

TEST(Synthetic, LlamaSevenBAtHalfKeepsThePapersRanks) {
  const SyntheticSpec s = synthetic_spec("llama-7b", 0.5);
  EXPECT_EQ(s.config.hidden, 4096);
  using W = SyntheticWeight;
  for (int layer : {0, 31}) {
    EXPECT_EQ(s.rank(layer, W::q, 4096, 4096), 1024);
    EXPECT_EQ(s.rank(layer, W::up, 11008, 4096), 1492);
    EXPECT_EQ(s.rank(layer, W::down, 4096, 11008), 1492);
  }
  EXPECT_EQ(synthetic_spec("llama-7b", 1.0).rank(0, W::q, 4096, 4096), -1);
  EXPECT_EQ(synthetic_spec("llama-3-8b", 0.5).config.n_kv_heads, 8);
}

TEST(Synthetic, BadNamesAndRatiosAreRefused) {
  EXPECT_TRUE(test::fails_with([] { synthetic_spec("llama-9b", 0.5); }, "unknown architecture 'llama-9b'"));
  EXPECT_TRUE(test::fails_with([] { synthetic_spec("llama-7b", 0); }, "(0, 1]"));
  EXPECT_TRUE(test::fails_with([] { synthetic_spec("llama-7b", 1.5); }, "(0, 1]"));
  EXPECT_TRUE(test::fails_with([] { synthetic_spec("llama-7b", 0.5, 0, 1.0); }, "--rank-spread"));
  EXPECT_TRUE(test::fails_with([] { synthetic_spec("llama-7b", 0.5, 0, -0.1); }, "--rank-spread"));
}

// --rank-spread: every matrix's rank within the spread of the uniform one,
// unequal across layers and weights, gate and up equal, the same on every
// call, and about the uniform model's size on average.
TEST(Synthetic, RankSpreadGivesUnequalRanksOfTheSameExpectedSize) {
  using W = SyntheticWeight;
  const SyntheticSpec uniform = synthetic_spec("llama-7b", 0.5), spread = synthetic_spec("llama-7b", 0.5, 0, 0.4);
  const struct {
    W w;
    int64_t out, in;
  } shapes[] = {{W::q, 4096, 4096}, {W::k, 4096, 4096}, {W::v, 4096, 4096},
                {W::o, 4096, 4096}, {W::gate, 11008, 4096}, {W::down, 4096, 11008}};
  double uniform_params = 0, spread_params = 0;
  std::set<int64_t> seen;
  for (int layer = 0; layer < 32; ++layer) {
    EXPECT_EQ(spread.rank(layer, W::gate, 11008, 4096), spread.rank(layer, W::up, 11008, 4096));
    for (const auto& s : shapes) {
      const int64_t base = uniform.rank(layer, s.w, s.out, s.in), r = spread.rank(layer, s.w, s.out, s.in);
      EXPECT_GE(r, static_cast<int64_t>(base * 0.6) - 1);
      EXPECT_LE(r, static_cast<int64_t>(base * 1.4) + 1);
      EXPECT_EQ(r, spread.rank(layer, s.w, s.out, s.in));
      seen.insert(r);
      uniform_params += double(base) * (s.out + s.in);
      spread_params += double(r) * (s.out + s.in);
    }
  }
  EXPECT_GT(seen.size(), 100u);
  EXPECT_NEAR(spread_params / uniform_params, 1.0, 0.1);
}

TEST(Synthetic, ValuesAreDeterministicBf16AndSpread) {
  double sum = 0, sq = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float v = synthetic_value(3, 17, i, 0.5f);
    ASSERT_EQ(v, bf16_to_f32(f32_to_bf16(v)));
    ASSERT_LE(std::fabs(v), 0.5f);
    ASSERT_EQ(v, synthetic_value(3, 17, i, 0.5f));
    sum += v;
    sq += double{v} * v;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 0.25 / 3, 0.005);  // uniform on [-0.5, 0.5)
  EXPECT_NE(synthetic_value(3, 17, 5, 0.5f), synthetic_value(4, 17, 5, 0.5f));
  EXPECT_NE(synthetic_value(3, 17, 5, 0.5f), synthetic_value(3, 18, 5, 0.5f));
  EXPECT_NEAR(synthetic_value(3, 17, 5, 0.125f, true), 1.0f, 0.126f);
}

TEST(Synthetic, HostModelHasTheSpecsRanksAndValidates) {
  SyntheticSpec s;
  s.name = "tiny";
  s.config = testing::small_config(64, 160, 2, 4, 2, 16, 50);
  s.keep = 0.5;
  const Model m = make_synthetic_model(s);
  EXPECT_EQ(m.layers[1].q.rank(), 16);   // 64 * 64 * 0.5 / 128
  EXPECT_EQ(m.layers[1].k.rank(), 10);   // 32 * 64 * 0.5 / 96
  EXPECT_EQ(m.layers[0].down.rank(), 22);  // 64 * 160 * 0.5 / 224
  EXPECT_EQ(m.layers[0].qkv.parts.size(), 3u);
  s.keep = 1.0;
  EXPECT_FALSE(make_synthetic_model(s).layers[0].o.low_rank());
}

// Encoders: BERT-family shapes, every layer linear at the rank rule, biases
// and LayerNorms present, packed and valid; bad names and ratios refused.
TEST(Synthetic, EncodersHaveTheirShapesAndRanks) {
  const EncoderModel m = make_synthetic_encoder("minilm-l6", 0.5);
  EXPECT_EQ(m.config.hidden, 384);
  EXPECT_EQ(m.config.n_layers, 6);
  EXPECT_EQ(m.config.head_dim(), 32);
  for (const EncoderLayer& l : m.layers) {
    EXPECT_EQ(l.q.rank(), 96);     // 384 * 384 * 0.5 / 768
    EXPECT_EQ(l.up.rank(), 153);   // int(1536 * 384 * 0.5 / 1920)
    EXPECT_EQ(l.down.rank(), 153);
    EXPECT_EQ(l.o.bias.numel(), 384);
    EXPECT_EQ(l.qkv.parts.size(), 3u);
  }
  EXPECT_FALSE(make_synthetic_encoder("bert-base", 1.0).layers[0].q.low_rank());
  EXPECT_EQ(make_synthetic_encoder("bert-large", 1.0).config.n_heads, 16);
  EXPECT_TRUE(test::fails_with([] { make_synthetic_encoder("bert-huge", 0.5); }, "unknown encoder 'bert-huge'"));
  EXPECT_TRUE(test::fails_with([] { make_synthetic_encoder("bert-base", 0); }, "(0, 1]"));
}

}  // namespace
}  // namespace fsvd
