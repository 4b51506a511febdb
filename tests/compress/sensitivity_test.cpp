#include "compress/sensitivity.h"

#include <gtest/gtest.h>

#include <vector>

#include "compress/matrix_kinds.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

constexpr int kLayers = 3;

Model model(uint64_t seed, int rank) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(16, 24, kLayers, 4, 2, 4, 32);
  spec.ranks = {rank, rank, rank, rank, rank, rank, rank};
  spec.seed = seed;
  return testing::random_model(spec);
}

struct Probed {
  Model dense = model(5, 0);
  Model uniform = model(6, 3);  // stands in for the truncated matrices: any other weights move the logits
  std::vector<std::vector<double>> dropped;
  KlProbe probe{dense, {3, 1, 4, 1, 5, 9, 2, 6}, 1};
  Probed() : dropped(kKindCount, std::vector<double>(kLayers)) {
    for (int k = 0; k < kKindCount; ++k)
      for (int l = 0; l < kLayers; ++l) dropped[k][l] = 1.0 + k + 10.0 * l;
  }
};

TEST(Sensitivity, PerMatrixIsEachMatrixsOwnKlPerUnitOfDroppedEnergy) {
  const Probed s;
  nlohmann::json record;
  const auto got = measure_sensitivity(s.dense, s.uniform, s.dropped, s.probe, SensitivityProbes::PerMatrix, {}, record);
  EXPECT_EQ(record["probes"], "matrix");
  for (int k = 0; k < kKindCount; ++k)
    for (int l = 0; l < kLayers; ++l) {
      Model m = s.dense;
      m.layers[l].*kKinds[k].member = s.uniform.layers[l].*kKinds[k].member;
      m.pack();
      const double want = s.probe.kl(m) / s.dropped[k][l];
      EXPECT_GT(want, 0.0);
      EXPECT_NEAR(got[k][l], want, 1e-9 * want) << kKinds[k].name << " " << l;
    }
}

// By construction each layer probe's KL is what the separable sensitivities predict for that layer.
TEST(Sensitivity, TypeAndLayerPredictsEachLayerProbe) {
  const Probed s;
  nlohmann::json record;
  std::vector<std::string> lines;
  const auto got = measure_sensitivity(s.dense, s.uniform, s.dropped, s.probe, SensitivityProbes::TypeAndLayer,
                                       [&](const std::string& l) { lines.push_back(l); }, record);
  EXPECT_EQ(lines.size(), size_t{kKindCount + kLayers});
  EXPECT_EQ(record["layer_factor"].size(), size_t{kLayers});
  for (int l = 0; l < kLayers; ++l) {
    Model m = s.dense;
    m.layers[l] = s.uniform.layers[l];
    double predicted = 0;
    for (int k = 0; k < kKindCount; ++k) predicted += got[k][l] * s.dropped[k][l];
    EXPECT_NEAR(predicted, s.probe.kl(m), 1e-9) << "layer " << l;
    // Separable: the ratio of two kinds is the same in every layer.
    EXPECT_NEAR(got[0][l] / got[6][l], got[0][0] / got[6][0], 1e-9 * got[0][0] / got[6][0]);
  }
}

}  // namespace
}  // namespace fsvd
