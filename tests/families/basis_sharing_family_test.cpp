#include "families/basis_sharing_family.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <nlohmann/json.hpp>

#include "families/load.h"
#include "family_test_util.h"
#include "lowrank_reference.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::fails_with;

const std::string kShard2 = "pytorch_model-00002-of-00002.bin";

std::string fixture_dir() { return testing::fixture("families/basis_sharing"); }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A writable copy of the fixture directory.
void copy_fixture(const test::TempDir& dir) {
  for (const auto& e : fs::directory_iterator(fixture_dir()))
    if (e.is_regular_file()) fs::copy_file(e.path(), dir.file(e.path().filename().string()));  // not upstream/
}

TEST(BasisSharingFamily, DetectsAndLoadsMatchingPyTorch) {
  EXPECT_EQ(detect_family(fixture_dir()), "basis_sharing");
  const Model m = load_model(fixture_dir());
  EXPECT_EQ(m.family, "basis_sharing");
  EXPECT_EQ(m.config.n_layers, 3);
  EXPECT_EQ(m.config.n_kv_heads, 2);
  EXPECT_EQ(m.layers[0].q.rank(), 5);
  EXPECT_EQ(m.layers[2].down.rank(), 13);
  const double err = test::relative_error_to_reference(m, fixture_dir() + "/reference.json");
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
}

TEST(BasisSharingFamily, AGroupHoldsItsBasisOnce) {
  const Model m = load_model(fixture_dir());
  const Layer &l0 = m.layers[0], &l1 = m.layers[1], &l2 = m.layers[2];
  // q, k, v, gate, up shared by layers 0 and 1 (their packs too); o and down private.
  EXPECT_EQ(l0.q.first.storage_id(), l1.q.first.storage_id());
  EXPECT_EQ(l0.qkv.first.storage_id(), l1.qkv.first.storage_id());
  EXPECT_EQ(l0.gate_up.first.storage_id(), l1.gate_up.first.storage_id());
  EXPECT_NE(l0.qkv.first.storage_id(), l2.qkv.first.storage_id());
  EXPECT_NE(l0.o.first.storage_id(), l1.o.first.storage_id());
  EXPECT_NE(l0.down.first.storage_id(), l1.down.first.storage_id());
  EXPECT_NE(l0.q.second.storage_id(), l1.q.second.storage_id());

  // Resident parameters: exactly PyTorch's unique storages, fewer than one basis per layer.
  const json ref = json::parse(read(fixture_dir() + "/reference.json"));
  const int64_t expected = ref.at("unique_params").get<int64_t>();
  EXPECT_EQ(m.unique_params(), expected);
  // Without de-duplication layer 1 would hold its own copies of five bases.
  int64_t copies = 0;
  for (const Linear* lin : {&l1.q, &l1.k, &l1.v, &l1.gate, &l1.up}) copies += lin->first.numel();
  EXPECT_EQ(copies, 5 * 16 + 3 * 16 + 7 * 16 + 7 * 16 + 11 * 16);
  int64_t every_tensor = m.embed.numel() + m.final_norm.numel() + m.lm_head.first.numel();
  for (const Layer& l : m.layers) {
    every_tensor += l.attn_norm.numel() + l.mlp_norm.numel();
    for (const Linear* lin : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
      every_tensor += lin->first.numel() + lin->second.numel();
  }
  EXPECT_EQ(m.unique_params(), every_tensor - copies);
}

TEST(BasisSharingFamily, RefusesDeclaredRanksThatDisagreeWithTensors) {
  const test::TempDir dir("basis_sharing_rank");
  copy_fixture(dir);
  json config = json::parse(read(dir.file("config.json")));
  config["num_basis_q"] = 6;
  dir.write("config.json", config.dump());
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "config.json: 'num_basis_q' = 6 disagrees with tensor "
                                                          "model.layers.0.self_attn.q_basis.weight of shape [5, 16]"));
}

TEST(BasisSharingFamily, RefusesBadGroups) {
  const test::TempDir dir("basis_sharing_groups");
  copy_fixture(dir);
  json config = json::parse(read(dir.file("config.json")));
  config["k_groups"] = {{0, 1}, {1, 2}};
  dir.write("config.json", config.dump());
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "config.json: 'k_groups' lists layer 1 twice"));
  config["k_groups"] = {{0, 1}};
  dir.write("config.json", config.dump());
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "config.json: 'k_groups' puts layer 2 in no group"));
  // Grouping layers whose stored bases differ.
  config["o_groups"] = {{0, 1}, {2}};
  config["k_groups"] = {{0, 1}, {2}};
  dir.write("config.json", config.dump());
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "model.layers.1.self_attn.o_basis.weight differs"));
}

TEST(BasisSharingFamily, RefusesTruncatedAndMaliciousShardsNamingThem) {
  const test::TempDir dir("basis_sharing_bad_shard");
  copy_fixture(dir);
  const std::string bytes = read(dir.file(kShard2));
  for (const size_t keep : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 30}) {
    std::ofstream(dir.file(kShard2), std::ios::binary | std::ios::trunc) << bytes.substr(0, keep);
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, kShard2)) << keep;
  }
  fs::copy_file(testing::fixture("torch/evil_os_system.pt"), dir.file(kShard2), fs::copy_options::overwrite_existing);
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, kShard2));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "os.system"));
}

TEST(BasisSharingFamily, RefusesAnIndexThatPointsOutsideTheDirectory) {
  const test::TempDir dir("basis_sharing_index");
  copy_fixture(dir);
  json index = json::parse(read(dir.file("pytorch_model.bin.index.json")));
  index["weight_map"]["model.norm.weight"] = "../" + kShard2;
  dir.write("pytorch_model.bin.index.json", index.dump());
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "pytorch_model.bin.index.json: weight_map entry "
                                                          "'model.norm.weight' names '../" + kShard2 + "'"));
}

TEST(BasisSharingFamily, PlainHuggingFaceDirectoriesAreNotTaken) {
  const test::TempDir dir("basis_sharing_plain");
  dir.write("config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})");
  EXPECT_NE(basis_sharing_mismatch(dir.path()), "");
  EXPECT_NE(basis_sharing_mismatch(fixture_dir() + "/config.json"), "");
  dir.write("config.json", "{not json");
  EXPECT_NE(basis_sharing_mismatch(dir.path()), "");
}

}  // namespace
}  // namespace fsvd
