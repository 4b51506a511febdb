#include "families/lowrank_arena_family.h"

#include <gtest/gtest.h>

#include <sstream>

#include "fixture_files.h"
#include "families/asvd_family.h"
#include "families/load.h"
#include "lowrank_reference.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

using test::fails_with;

const std::string kFamily = "lowrank_arena";
const std::string kShard1 = "model-00001-of-00002.safetensors", kShard2 = "model-00002-of-00002.safetensors";
const std::string kK1 = "model.layers.1.self_attn.k_proj";

std::string fixture_dir() { return test::family_fixture(kFamily); }

TEST(LowRankArenaFamily, DetectsAndLoadsMatchingPyTorch) {
  EXPECT_EQ(detect_family(fixture_dir()), "lowrank_arena");
  const Model m = load_model(fixture_dir());
  EXPECT_EQ(m.family, "lowrank_arena");
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 4);
  // Tied embeddings: lm_head is the embedding, not a copy.
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(m.lm_head.first.storage_id(), m.embed.storage_id());
  EXPECT_EQ(m.layers[0].q.rank(), 7);
  EXPECT_EQ(m.layers[0].k.rank(), 3);
  EXPECT_EQ(m.layers[0].down.rank(), 11);
  EXPECT_FALSE(m.layers[0].o.low_rank());
  EXPECT_EQ(m.layers[1].o.rank(), 7);
  EXPECT_EQ(m.layers[1].gate.rank(), 11);
  const double err = test::relative_error_to_reference(m, test::family_fixture(kFamily, "reference.json"));
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
}

TEST(LowRankArenaFamily, ConvertsToNativeBitIdentically) {
  test::expect_native_round_trip_bit_identical(load_model(fixture_dir()));
}

TEST(LowRankArenaFamily, OtherDirectoriesAreNotTakenAndTheDenseLoaderRefusesIt) {
  EXPECT_NE(lowrank_arena_mismatch(test::family_fixture("asvd")), "");
  EXPECT_NE(lowrank_arena_mismatch(test::family_fixture("basis_sharing")), "");
  EXPECT_NE(lowrank_arena_mismatch(test::family_fixture(kFamily, kShard1)), "");
  EXPECT_NE(asvd_mismatch(fixture_dir()), "");
  const test::TempDir dir("lowrank_arena_plain");
  dir.write("config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})");
  EXPECT_NE(lowrank_arena_mismatch(dir.path()), "");
  EXPECT_TRUE(fails_with([&] { load_model(fixture_dir(), {"hf"}); }, "model_type 'lowrank_llama' is not supported"));
}

TEST(LowRankArenaFamily, RefusesADeclaredRankThatDisagreesWithTheTensors) {
  const test::TempDir dir("lowrank_arena_rank");
  test::copy_family_fixture(kFamily, dir);
  test::edit_config(dir, [](nlohmann::json& c) { c["low_rank_modules"][kK1]["rank"] = 4; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); },
                         "config.json: 'low_rank_modules' gives " + kK1 + " rank 4 but tensor " + kK1 +
                             ".BLinear.weight in " + dir.file("model.safetensors.index.json") +
                             " has shape [5, 16]"));
}

TEST(LowRankArenaFamily, RefusesMissingAndUnlistedFactors) {
  {
    const test::TempDir dir("lowrank_arena_unlisted");
    test::copy_family_fixture(kFamily, dir);
    test::edit_config(dir, [](nlohmann::json& c) { c["low_rank_modules"].erase(kK1); });
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "model.safetensors.index.json: holds factor " + kK1 +
                                                            ".BLinear.weight but " + dir.file("config.json") +
                                                            " does not list " + kK1 + " in 'low_rank_modules'"));
  }
  {
    // Gone from its shard: the index still maps it there.
    const test::TempDir dir("lowrank_arena_missing");
    test::copy_family_fixture(kFamily, dir);
    test::drop_tensor(dir.file(kShard2), kK1 + ".BLinear.weight");
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "weight_map puts tensor " + kK1 + ".BLinear.weight in " +
                                                            dir.file(kShard2) + ", which does not contain it"));
  }
  {
    // Gone from the shard and the index: a listed module without its first factor.
    const test::TempDir dir("lowrank_arena_missing_both");
    test::copy_family_fixture(kFamily, dir);
    test::drop_tensor(dir.file(kShard2), kK1 + ".BLinear.weight");
    nlohmann::json index = nlohmann::json::parse(read_file(dir.file("model.safetensors.index.json")));
    index["weight_map"].erase(kK1 + ".BLinear.weight");
    dir.write("model.safetensors.index.json", index.dump());
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "tensor " + kK1 + ".BLinear.weight not found, though " +
                                                            dir.file("config.json") + " lists " + kK1));
  }
}

TEST(LowRankArenaFamily, RefusesATruncatedShardNamingIt) {
  const test::TempDir dir("lowrank_arena_truncated");
  test::copy_family_fixture(kFamily, dir);
  const std::string bytes = read_file(dir.file(kShard1));
  for (const size_t keep : {size_t{0}, size_t{7}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    dir.write(kShard1, bytes.substr(0, keep));
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, dir.file(kShard1))) << keep;
  }
}

TEST(LowRankArenaFamily, RefusesACorruptConfigNamingIt) {
  const test::TempDir dir("lowrank_arena_config");
  test::copy_family_fixture(kFamily, dir);
  const std::string config = dir.file("config.json");
  test::edit_config(dir, [](nlohmann::json& c) { c["low_rank_modules"][kK1] = 5; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); },
                         config + ": 'low_rank_modules' entry '" + kK1 + "' must be an object with a \"rank\""));
  test::edit_config(dir, [](nlohmann::json& c) { c["low_rank_modules"][kK1] = {{"rank", -5}}; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "' rank must be a positive integer rank, got -5"));
  test::edit_config(dir, [](nlohmann::json& c) { c["low_rank_schema"] = "UVLinear"; });
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); },
                         config + ": low_rank_schema \"UVLinear\" is not supported (supported: \"ABLinear\")"));
  const std::string text = read_file(config);
  dir.write("config.json", text.substr(0, text.size() / 2));
  EXPECT_TRUE(fails_with([&] { load_lowrank_arena(dir.path()); }, config + ": not valid JSON"));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, config));
  EXPECT_NE(lowrank_arena_mismatch(dir.path()), "");
}

}  // namespace
}  // namespace fsvd
