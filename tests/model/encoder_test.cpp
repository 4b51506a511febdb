#include "model/encoder.h"

#include <gtest/gtest.h>

#include "testing/fails_with.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using test::fails_with;

TEST(EncoderModel, PackSharesStorageAndCountsItOnce) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 1, 2);
  const EncoderConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  for (const EncoderLayer& l : m.layers) {
    ASSERT_EQ(l.qkv.parts.size(), 3u);
    EXPECT_EQ(l.qkv.first.dim(0), 3 * d);
    EXPECT_EQ(l.v.first.storage_id(), l.qkv.first.storage_id());
  }
  const int64_t layer = 4 * (d * d + d) + (f * d + f) + (d * f + d) + 4 * d;
  const int64_t embeddings = (c.vocab + c.max_positions + c.type_vocab) * d + 2 * d;
  const int64_t head = (d * d + d) + (2 * d + 2);
  EXPECT_EQ(m.unique_params(), embeddings + c.n_layers * layer + head);
}

TEST(EncoderModel, ValidateNamesTheBadTensor) {
  EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 2);
  m.layers[1].mlp_norm.bias = Tensor({7});
  EXPECT_TRUE(fails_with([&] { m.validate(); }, "layer 1 MLP LayerNorm"));
  m = testing::random_encoder(testing::small_encoder_config(), 2);
  m.max_tokens = 100;
  EXPECT_TRUE(fails_with([&] { m.validate(); }, "maximum input length 100"));
  EncoderConfig c = testing::small_encoder_config();
  c.position_offset = 2;
  EXPECT_EQ(c.max_tokens(), 22);
  c.n_heads = 3;
  EXPECT_TRUE(fails_with([&] { c.validate("cfg"); }, "not a multiple"));
}

}  // namespace
}  // namespace fsvd
