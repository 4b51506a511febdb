#include "families/palu_family.h"

#include <gtest/gtest.h>

#include <sstream>

#include "fixture_files.h"
#include "families/load.h"
#include "lowrank_reference.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

using json = nlohmann::json;
using test::fails_with;

const std::string kFamily = "palu";
const std::string kK0 = "model.layers.0.self_attn.k_proj", kV0 = "model.layers.0.self_attn.v_proj";

std::string fixture_dir() { return test::family_fixture(kFamily); }

TEST(PaluFamily, DetectsAndLoadsMatchingPyTorch) {
  EXPECT_EQ(detect_family(fixture_dir()), "palu");
  const Model m = load_model(fixture_dir());
  EXPECT_EQ(m.family, "palu");
  EXPECT_EQ(m.config.n_layers, 3);
  EXPECT_EQ(m.config.n_kv_heads, 2);
  // Rank = sum of the head groups' ranks; everything but k/v stays dense.
  EXPECT_EQ(m.layers[0].k.rank(), 3 + 2);
  EXPECT_EQ(m.layers[0].v.rank(), 4 + 1);
  EXPECT_EQ(m.layers[1].k.rank(), 1 + 3);
  EXPECT_EQ(m.layers[2].k.rank(), 5);
  EXPECT_FALSE(m.layers[2].v.low_rank());
  EXPECT_FALSE(m.layers[0].q.low_rank());
  EXPECT_FALSE(m.layers[0].o.low_rank());
  EXPECT_FALSE(m.layers[0].gate.low_rank());
  const double err = test::relative_error_to_reference(m, test::family_fixture(kFamily, "reference.json"));
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
}

TEST(PaluFamily, HeadGroupsBecomeABlockDiagonalSecondFactor) {
  const Model m = load_model(fixture_dir());
  const Tensor& u = m.layers[0].k.second;  // groups of 4 outputs with ranks 3 and 2
  ASSERT_EQ(u.shape(), (std::vector<int64_t>{8, 5}));
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t col = 0; col < 5; ++col) {
      if ((row < 4) != (col < 3)) {
        EXPECT_EQ(u.data()[row * 5 + col], 0.0f) << row << ", " << col;
      }
    }
  EXPECT_NE(u.data()[0], 0.0f);
  EXPECT_NE(u.data()[7 * 5 + 4], 0.0f);
}

TEST(PaluFamily, ConvertsToNativeBitIdentically) {
  test::expect_native_round_trip_bit_identical(load_model(fixture_dir()));
}

TEST(PaluFamily, RefusesHeadWiseRanksThatDisagreeWithTheTensors) {
  const test::TempDir dir("palu_ranks");
  test::copy_family_fixture(kFamily, dir);
  const std::string original = read_file(dir.file("config.json"));
  const auto fails = [&](auto edit, const std::string& message) {
    dir.write("config.json", original);
    test::edit_config(dir, edit);
    return fails_with([&] { load_model(dir.path()); }, message);
  };
  const std::string config = dir.file("config.json");
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"][kK0] = {3, 3}; },
                    config + ": 'head_wise_ranks' lists [3, 3] for " + kK0 + " but its tensors in " +
                        dir.file("model.safetensors") + " have ranks [3, 2]"));
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"].erase(kV0); },
                    config + ": 'head_wise_ranks' does not list " + kV0));
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"]["model.layers.2.self_attn.v_proj"] = {4, 4}; },
                    "'head_wise_ranks' lists model.layers.2.self_attn.v_proj but"));
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"]["model.layers.0.self_attn.q_proj"] = {4}; },
                    "'head_wise_ranks' lists model.layers.0.self_attn.q_proj: only k_proj and v_proj"));
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"]["model.layers.9.self_attn.k_proj"] = {4}; },
                    "'head_wise_ranks' lists modules that are not layers of this model"));
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"] = {1, 2}; }, "'head_wise_ranks' must be an object"));
  EXPECT_TRUE(fails([](json& c) { c["head_wise_ranks"][kK0] = {3, 0}; }, "holds 0, not a positive rank"));
}

TEST(PaluFamily, RefusesGroupFactorsOfTheWrongShape) {
  const test::TempDir dir("palu_shapes");
  test::copy_family_fixture(kFamily, dir);
  // Without U.1 the one remaining group would cover all 8 outputs.
  test::drop_tensor(dir.file("model.safetensors"), kK0 + ".U.1.weight");
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, dir.file("model.safetensors") + ": tensor " + kK0 +
                                                              ".U.0.weight has shape [4, 3] but 1 groups of 8 "
                                                              "outputs need [8, rank]"));
  const test::TempDir dir2("palu_shapes_vt");
  test::copy_family_fixture(kFamily, dir2);
  test::drop_tensor(dir2.file("model.safetensors"), kV0 + ".VT.weight");
  EXPECT_TRUE(fails_with([&] { load_model(dir2.path()); }, "'head_wise_ranks' lists " + kV0 + " but"));
}

TEST(PaluFamily, RefusesTruncatedWeightsNamingThem) {
  const test::TempDir dir("palu_truncated");
  test::copy_family_fixture(kFamily, dir);
  const std::string bytes = read_file(dir.file("model.safetensors"));
  for (const size_t keep : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 30}) {
    dir.write("model.safetensors", bytes.substr(0, keep));
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "model.safetensors")) << keep;
  }
}

TEST(PaluFamily, OtherDirectoriesAreNotTakenAndTheDenseLoaderRefusesIt) {
  EXPECT_NE(palu_mismatch(test::family_fixture("basis_sharing")), "");
  EXPECT_NE(palu_mismatch(test::family_fixture("dobi_svd/remapping")), "");
  EXPECT_NE(palu_mismatch(test::family_fixture(kFamily, "config.json")), "");
  const test::TempDir dir("palu_plain");
  dir.write("config.json", "{not json");
  EXPECT_NE(palu_mismatch(dir.path()), "");
  EXPECT_TRUE(fails_with([&] { load_model(fixture_dir(), {"hf"}); }, "model_type 'palullama' is not supported"));
}

}  // namespace
}  // namespace fsvd
