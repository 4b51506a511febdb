// summarize(): shared factors, sharing flags and the parameter totals that
// `flashsvd info` prints (bytes saved against the dense model).
#include "model/summary.h"

#include <gtest/gtest.h>

#include "testing/random_model.h"

namespace fsvd {
namespace {

// Four layers sharing q, k, v, gate and up first factors in pairs; low-rank untied lm_head.
Model shared_model(bool pack) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(36, 53, 4, 3, 1, 12, 71);
  spec.ranks = {10, 3, 5, 7, 9, 12, 6};
  spec.lm_head_rank = 9;
  spec.share_group = 2;
  spec.pack = pack;
  return testing::random_model(spec);
}

TEST(Summary, SharedFactorsAndSavingsAgainstDense) {
  for (bool pack : {false, true}) {
    SCOPED_TRACE(pack ? "packed" : "unpacked");
    const ModelSummary s = summarize(shared_model(pack));
    // Two groups x five shared first factors, each used by two layers.
    ASSERT_EQ(s.shared.size(), 10u);
    EXPECT_EQ(s.shared[0].shape, (std::vector<int64_t>{10, 36}));
    EXPECT_EQ(s.shared[0].users, (std::vector<std::pair<int, std::string>>{{0, "q.first"}, {1, "q.first"}}));
    EXPECT_EQ(s.shared[9].users, (std::vector<std::pair<int, std::string>>{{2, "up.first"}, {3, "up.first"}}));
    ASSERT_EQ(s.linears.size(), 4u * 7 + 1);
    EXPECT_TRUE(s.linears[0].shared);    // layer 0 q
    EXPECT_FALSE(s.linears[3].shared);   // layer 0 o
    EXPECT_FALSE(s.linears[28].shared);  // lm_head
    // Per pair of layers: q|k|v (18 rows) and gate|up (21 rows) first factors of width 36, once.
    // Per layer: second factors, o and down, norms. Then lm_head (rank 9), embed, final norm.
    const int64_t per_pair = (18 + 21) * 36;
    const int64_t per_layer = 36 * 10 + 12 * 3 + 12 * 5 + 2 * 7 * 36 + 53 * 9 + 53 * 12 + 6 * 53 + 36 * 6 + 72;
    EXPECT_EQ(s.unique_params, 2 * per_pair + 4 * per_layer + (9 * 36 + 71 * 9) + 71 * 36 + 36);
    const int64_t dense_layer = 36 * 36 * 2 + 12 * 36 * 2 + 53 * 36 * 3 + 72;
    EXPECT_EQ(s.dense_params, 4 * dense_layer + 71 * 36 * 2 + 36);
  }
}

TEST(Summary, DenseModelSharesNothing) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(16, 24, 2, 2, 2, 8, 30);
  spec.config.tied_embeddings = true;
  const ModelSummary s = summarize(testing::random_model(spec));
  EXPECT_TRUE(s.shared.empty());
  EXPECT_EQ(s.unique_params, s.dense_params);
}

}  // namespace
}  // namespace fsvd
