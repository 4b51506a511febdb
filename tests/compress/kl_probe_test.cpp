#include "compress/kl_probe.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

Model model(uint64_t seed) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(16, 20, 2, 4, 2, 6, 32);
  spec.seed = seed;
  return testing::random_model(spec);
}

TEST(KlProbe, IsZeroForTheReferenceAndGrowsWithTheDamage) {
  const Model dense = model(3);
  const KlProbe probe(dense, {1, 5, 9, 2, 7, 7, 30, 0}, 1);
  EXPECT_EQ(probe.tokens(), 8);
  EXPECT_NEAR(probe.kl(dense), 0.0, 1e-6);

  // Scaling one projection moves the distributions; scaling it more moves them further.
  auto scaled = [&](float factor) {
    Model m = dense;
    Tensor w({m.layers[1].down.out(), m.layers[1].down.in()});
    for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] = dense.layers[1].down.first.data()[i] * factor;
    m.layers[1].down.first = w;
    m.pack();
    return probe.kl(m);
  };
  const double small = scaled(1.5f), large = scaled(4.0f);
  EXPECT_GT(small, 1e-4);
  EXPECT_GT(large, small);
}

TEST(KlProbe, StartingAtTheFirstChangedLayerGivesTheWholeForwardsKl) {
  const Model dense = model(3);
  const KlProbe probe(dense, {4, 8, 15, 16, 23, 31}, 1);
  Model m = dense;
  m.layers[1].up = model(9).layers[1].up;  // layer 0 stays the reference's
  m.pack_layer(1);
  const double whole = probe.kl(m);
  EXPECT_GT(whole, 1e-4);
  EXPECT_NEAR(probe.kl(m, 1), whole, 1e-9 * whole);
  EXPECT_THROW(probe.kl(m, 2), Error);
  EXPECT_THROW(probe.kl(m, -1), Error);
}

TEST(KlProbe, RejectsEmptyProbesAndOtherVocabularies) {
  const Model dense = model(3);
  EXPECT_THROW(KlProbe(dense, {}, 1), Error);
  EXPECT_THROW(KlProbe(dense, {1, 32}, 1), Error);  // outside the vocabulary
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(16, 20, 2, 4, 2, 6, 40);
  const KlProbe probe(dense, {1, 2, 3}, 1);
  EXPECT_THROW(probe.kl(testing::random_model(spec)), Error);
}

}  // namespace
}  // namespace fsvd
