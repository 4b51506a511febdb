#include "families/asvd_family.h"

#include <gtest/gtest.h>

#include <sstream>

#include "fixture_files.h"
#include "families/load.h"
#include "families/lowrank_arena_family.h"
#include "lowrank_reference.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

using test::fails_with;

const std::string kFamily = "asvd";
const std::string kQ0 = "model.layers.0.self_attn.q_proj";

std::string fixture_dir() { return test::family_fixture(kFamily); }

TEST(AsvdFamily, DetectsAndLoadsMatchingPyTorch) {
  EXPECT_EQ(detect_family(fixture_dir()), "asvd");
  const Model m = load_model(fixture_dir());
  EXPECT_EQ(m.family, "asvd");
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.n_layers, 3);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 6);  // from config.json, not hidden / heads
  EXPECT_FALSE(c.tied_embeddings);
  // Ranks from the BLinear shapes; unequal within a layer; dense where not listed.
  EXPECT_EQ(m.layers[0].q.rank(), 5);
  EXPECT_EQ(m.layers[0].k.rank(), 3);
  EXPECT_EQ(m.layers[0].v.rank(), 7);
  EXPECT_EQ(m.layers[1].down.rank(), 13);
  EXPECT_FALSE(m.layers[1].v.low_rank());
  EXPECT_FALSE(m.layers[2].gate.low_rank());
  EXPECT_EQ(m.lm_head.rank(), 7);
  EXPECT_EQ(m.lm_head.out(), 37);
  // attention_bias: ALinear.bias on factorized linears, .bias on the dense v_proj.
  EXPECT_EQ(m.layers[0].q.bias.numel(), 24);
  EXPECT_EQ(m.layers[1].v.bias.numel(), 12);
  EXPECT_TRUE(m.layers[0].gate.bias.empty());
  const double err = test::relative_error_to_reference(m, test::family_fixture(kFamily, "reference.json"));
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
}

TEST(AsvdFamily, ConvertsToNativeBitIdentically) {
  test::expect_native_round_trip_bit_identical(load_model(fixture_dir()));
}

TEST(AsvdFamily, OtherDirectoriesAreNotTakenAndTheDenseLoaderRefusesIt) {
  EXPECT_NE(asvd_mismatch(test::family_fixture("lowrank_arena")), "");
  EXPECT_NE(asvd_mismatch(test::family_fixture("basis_sharing")), "");
  EXPECT_NE(asvd_mismatch(test::family_fixture(kFamily, "config.json")), "");
  EXPECT_NE(lowrank_arena_mismatch(fixture_dir()), "");
  const test::TempDir dir("asvd_plain");
  dir.write("config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})");
  EXPECT_NE(asvd_mismatch(dir.path()), "");
  EXPECT_TRUE(fails_with([&] { load_model(fixture_dir(), {"hf"}); }, "architecture 'ASVDLlamaForCausalLM' is not supported"));
}

TEST(AsvdFamily, RefusesADeclaredRankThatDisagreesWithTheTensors) {
  const test::TempDir dir("asvd_rank");
  test::copy_family_fixture(kFamily, dir);
  test::edit_config(dir, [](nlohmann::json& c) { c["truncation_ranks"][kQ0] = 6; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); },
                         "config.json: 'truncation_ranks' gives " + kQ0 + " rank 6 but tensor " + kQ0 +
                             ".BLinear.weight in " + dir.file("model.safetensors") + " has shape [5, 16]"));
}

TEST(AsvdFamily, RefusesMissingUnlistedAndUnknownFactors) {
  {
    const test::TempDir dir("asvd_unlisted");
    test::copy_family_fixture(kFamily, dir);
    test::edit_config(dir, [](nlohmann::json& c) { c["truncation_ranks"].erase("lm_head"); });
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "model.safetensors: holds factor lm_head.BLinear.weight "
                                                            "but " + dir.file("config.json") + " does not list lm_head"));
  }
  {
    const test::TempDir dir("asvd_missing");
    test::copy_family_fixture(kFamily, dir);
    test::drop_tensor(dir.file("model.safetensors"), "model.layers.1.mlp.up_proj.ALinear.weight");
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); },
                           "model.safetensors: tensor model.layers.1.mlp.up_proj.ALinear.weight not found, though " +
                               dir.file("config.json") + " lists model.layers.1.mlp.up_proj in 'truncation_ranks'"));
  }
  {
    const test::TempDir dir("asvd_unknown");
    test::copy_family_fixture(kFamily, dir);
    test::edit_config(dir, [](nlohmann::json& c) { c["truncation_ranks"]["model.layers.3.mlp.up_proj"] = 5; });
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "config.json: 'truncation_ranks' lists "
                                                            "model.layers.3.mlp.up_proj, which is not a linear"));
  }
}

TEST(AsvdFamily, RefusesTruncatedWeightsNamingTheFile) {
  const test::TempDir dir("asvd_truncated");
  test::copy_family_fixture(kFamily, dir);
  const std::string bytes = read_file(dir.file("model.safetensors"));
  for (const size_t keep : {size_t{0}, size_t{7}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    dir.write("model.safetensors", bytes.substr(0, keep));
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, dir.file("model.safetensors"))) << keep;
  }
}

TEST(AsvdFamily, RefusesACorruptConfigNamingIt) {
  const test::TempDir dir("asvd_config");
  test::copy_family_fixture(kFamily, dir);
  const std::string config = dir.file("config.json");
  test::edit_config(dir, [](nlohmann::json& c) { c["truncation_ranks"][kQ0] = "five"; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, config + ": 'truncation_ranks' entry '" + kQ0 +
                                                              "' must be a positive integer rank, got \"five\""));
  test::edit_config(dir, [](nlohmann::json& c) { c["truncation_ranks"] = nlohmann::json::array(); });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, config + ": 'truncation_ranks' must be an object"));
  test::edit_config(dir, [](nlohmann::json& c) { c["model_type"] = "opt"; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, config + ": ASVD model_type 'opt' is not supported"));
  const std::string text = read_file(config);
  dir.write("config.json", text.substr(0, text.size() / 2));
  EXPECT_TRUE(fails_with([&] { load_asvd(dir.path()); }, config + ": not valid JSON"));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, config));
  EXPECT_NE(asvd_mismatch(dir.path()), "");
}

}  // namespace
}  // namespace fsvd
