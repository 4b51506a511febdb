// The native format: save_native then load_native gives back the unified model
// bit for bit (F32), with shared tensors once on disk and once in memory, and
// refuses files whose metadata and tensors disagree.
#include "families/native_family.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include "backends/cpu/cpu_executor.h"
#include "families/load.h"
#include "family_test_util.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "testing/fails_with.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using test::fails_with;
using nlohmann::json;

struct Case {
  std::string name;
  testing::RandomModelSpec spec;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  {
    Case c{"dense_tied", {}};
    c.spec.config = testing::small_config(24, 40, 2, 4, 2, 6, 50);
    c.spec.config.tied_embeddings = true;
    out.push_back(c);
  }
  {
    Case c{"lowrank_unequal_ranks_qkv_bias", {}};
    c.spec.config = testing::small_config(32, 44, 3, 4, 1, 8, 61);
    c.spec.ranks = {7, 3, 5, 9, 11, 6, 4};
    c.spec.qkv_bias = true;
    c.spec.seed = 2;
    out.push_back(c);
  }
  {
    Case c{"shared_bases_lowrank_lm_head_llama3", {}};
    c.spec.config = testing::small_config(36, 53, 4, 3, 1, 12, 71);
    c.spec.config.rope_theta = 500000.0f;
    c.spec.config.rope_scaling = {"llama3", 8.0f, 1.0f, 4.0f, 64};
    c.spec.config.rms_eps = 1e-6f;
    c.spec.ranks = {10, 3, 5, 7, 9, 12, 6};
    c.spec.lm_head_rank = 9;
    c.spec.share_group = 2;
    c.spec.seed = 3;
    out.push_back(c);
  }
  {
    Case c{"mixed_dense_and_lowrank_unpacked", {}};
    c.spec.config = testing::small_config(20, 30, 2, 2, 2, 10, 33);
    c.spec.ranks = {4, 0, 6, 0, 5, 0, 3};
    c.spec.pack = false;  // save_native packs it
    c.spec.seed = 4;
    out.push_back(c);
  }
  return out;
}

std::vector<float> logits_of(const Model& m) {
  std::vector<int32_t> tokens(13);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7 + 3) % m.config.vocab);
  CpuExecutor ex(m, 16, 1);
  std::vector<float> logits;
  ex.forward(tokens, 0, true, logits);
  return logits;
}

int64_t stored_elements(const std::string& dir) {
  const SafetensorsFile f(dir + "/model.safetensors");
  int64_t n = 0;
  for (const std::string& name : f.names()) {
    const auto& shape = f.raw(name).shape;
    n += std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  }
  return n;
}

class NativeRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(NativeRoundTrip, F32IsBitIdenticalWithSharedTensorsOnceOnDiskAndInMemory) {
  Model want = testing::random_model(GetParam().spec);
  const test::TempDir dir("native_roundtrip");
  save_native(want, dir.path());
  EXPECT_EQ(detect_family(dir.path()), "native");
  const Model got = load_model(dir.path());
  EXPECT_EQ(got.family, "native");
  EXPECT_EQ(got.source, dir.path());
  test::expect_same_model(got, want);
  EXPECT_EQ(got.config.rope_scaling.factor, want.config.rope_scaling.factor);
  EXPECT_EQ(got.config.rope_scaling.original_max_position, want.config.rope_scaling.original_max_position);
  EXPECT_EQ(got.config.rms_eps, want.config.rms_eps);  // exact, not just close

  if (!GetParam().spec.pack) want.pack();
  const std::vector<float> a = logits_of(want), b = logits_of(got);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "logits differ";

  // Each storage once: on disk exactly the unique parameters, in memory the same.
  EXPECT_EQ(stored_elements(dir.path()), want.unique_params());
  EXPECT_EQ(got.unique_params(), want.unique_params());
  for (size_t i = 0; i < got.layers.size(); ++i) {
    EXPECT_EQ(got.layers[i].qkv.first.storage_id(), got.layers[i].q.first.storage_id()) << "layer " << i;
    for (size_t j = 0; j < i; ++j)
      EXPECT_EQ(got.layers[i].qkv.first.storage_id() == got.layers[j].qkv.first.storage_id(),
                want.layers[i].qkv.first.storage_id() == want.layers[j].qkv.first.storage_id())
          << "layers " << j << " and " << i;
  }
  EXPECT_EQ(got.lm_head.first.storage_id() == got.embed.storage_id(), want.config.tied_embeddings);
}

INSTANTIATE_TEST_SUITE_P(Models, NativeRoundTrip, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

testing::RandomModelSpec shared_spec() {
  return cases()[2].spec;
}

TEST(NativeFamily, SharedBasesAreListedAndStoredOnce) {
  const Model m = testing::random_model(shared_spec());
  const test::TempDir dir("native_shared");
  save_native(m, dir.path());
  const SafetensorsFile f(dir.file("model.safetensors"));
  // Four layers in groups of two: two q|k|v packs and two gate|up packs, not four.
  int qkv = 0, gate_up = 0;
  for (const std::string& name : f.names()) {
    qkv += name.ends_with(".qkv.first");
    gate_up += name.ends_with(".gate_up.first");
  }
  EXPECT_EQ(qkv, 2);
  EXPECT_EQ(gate_up, 2);
  const NativeManifest manifest = read_native_manifest(dir.path());
  EXPECT_EQ(manifest.layers[1].linears[0].first, "layers.0.qkv.first");
  EXPECT_EQ(manifest.layers[3].linears[4].first, "layers.2.gate_up.first");
  const std::vector<NativeSharedTensor> shared = shared_tensors(manifest);
  ASSERT_EQ(shared.size(), 4u);
  EXPECT_EQ(shared[0].tensor, "layers.0.qkv.first");
  EXPECT_EQ(shared[0].users, (std::vector<std::string>{"layers.0.q.first", "layers.0.k.first", "layers.0.v.first",
                                                       "layers.1.q.first", "layers.1.k.first", "layers.1.v.first"}));
}

TEST(NativeFamily, TiedEmbeddingIsOneTensor) {
  const Model m = testing::random_model(cases()[0].spec);
  const test::TempDir dir("native_tied");
  save_native(m, dir.path());
  const NativeManifest manifest = read_native_manifest(dir.path());
  EXPECT_EQ(manifest.lm_head.first, "embed");
  const std::vector<NativeSharedTensor> shared = shared_tensors(manifest);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0].users, (std::vector<std::string>{"embed", "lm_head.first"}));
  EXPECT_FALSE(SafetensorsFile(dir.file("model.safetensors")).contains("lm_head.first"));
}

TEST(NativeFamily, HalfPrecisionRoundsMatricesAndKeepsVectorsExact) {
  const Model m = testing::random_model(cases()[1].spec);
  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const test::TempDir dir("native_half");
    save_native(m, dir.path(), {.dtype = dtype, .provenance = {{"ratio", 0.5}}});
    const Model got = load_model(dir.path());
    const Tensor& w = m.layers[1].o.second;
    const Tensor& g = got.layers[1].o.second;
    ASSERT_EQ(g.shape(), w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const float rounded =
          dtype == DType::F16 ? f16_to_f32(f32_to_f16(w.data()[i])) : bf16_to_f32(f32_to_bf16(w.data()[i]));
      ASSERT_EQ(g.data()[i], rounded) << i;
    }
    for (const auto& [a, b] : {std::pair{&got.final_norm, &m.final_norm},
                               std::pair{&got.layers[2].mlp_norm, &m.layers[2].mlp_norm},
                               std::pair{&got.layers[0].q.bias, &m.layers[0].q.bias}})
      EXPECT_EQ(std::memcmp(a->data(), b->data(), b->numel() * sizeof(float)), 0) << "vectors stay F32";
    const SafetensorsFile f(dir.file("model.safetensors"));
    EXPECT_EQ(f.raw("embed").dtype, dtype);
    EXPECT_EQ(f.raw("final_norm").dtype, DType::F32);
    EXPECT_EQ(f.raw("layers.0.q.bias").dtype, DType::F32);
    const NativeManifest manifest = read_native_manifest(dir.path());
    EXPECT_EQ(manifest.dtype, dtype);
    EXPECT_EQ(manifest.provenance, json({{"ratio", 0.5}}));
    EXPECT_EQ(manifest.source_family, "random");
  }
}

TEST(NativeFamily, F16OverflowIsAnErrorNotInfinity) {
  Model m = testing::random_model(cases()[0].spec);
  m.embed.data()[5] = 1e6f;
  const test::TempDir dir("native_overflow");
  EXPECT_TRUE(fails_with([&] { save_native(m, dir.path(), {.dtype = DType::F16}); }, "beyond the F16 range"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("flashsvd.json")));
  save_native(m, dir.path(), {.dtype = DType::BF16});
}

TEST(NativeFamily, SavingAgainReplacesTheModel) {
  const test::TempDir dir("native_again");
  save_native(testing::random_model(cases()[0].spec), dir.path());
  const Model second = testing::random_model(cases()[1].spec);
  save_native(second, dir.path());
  test::expect_same_model(load_model(dir.path()), second);
}

TEST(NativeFamily, DetectionNeedsTheManifest) {
  const test::TempDir dir("native_detect");
  EXPECT_EQ(native_mismatch(dir.path()), "directory has no flashsvd.json");
  EXPECT_EQ(native_mismatch(dir.file("nothing")), "not a directory");
}

// ---- Corrupt or inconsistent files. ----

class NativeCorrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    save_native(testing::random_model(shared_spec()), dir_.path());
    manifest_ = json::parse(testing_read(dir_.file("flashsvd.json")));
  }
  static std::string testing_read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void write_manifest(const json& j) const { dir_.write("flashsvd.json", j.dump()); }
  // Rewrites model.safetensors after `edit` changed its tensors.
  void edit_weights(const std::function<void(std::vector<SafetensorsEntry>&)>& edit) const {
    std::vector<SafetensorsEntry> entries;
    {
      const SafetensorsFile f(dir_.file("model.safetensors"));
      for (const std::string& name : f.names()) entries.push_back({name, f.load_f32(name), f.raw(name).dtype});
    }
    edit(entries);
    write_safetensors(dir_.file("model.safetensors"), entries);
  }
  // Loading must fail naming the file and saying `needle`.
  ::testing::AssertionResult refuses(const std::string& file, const std::string& needle) const {
    const auto named = fails_with([&] { load_model(dir_.path()); }, dir_.file(file));
    if (!named) return named;
    return fails_with([&] { load_model(dir_.path()); }, needle);
  }
  test::TempDir dir_{"native_corrupt"};
  json manifest_;
};

TEST_F(NativeCorrupt, UnknownVersionOrFormat) {
  manifest_["version"] = 2;
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "unsupported version 2 (this build reads version 1)"));
  manifest_["version"] = 1;
  manifest_["format"] = "other";
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "format is 'other'"));
}

TEST_F(NativeCorrupt, RankDisagreeingWithShapes) {
  manifest_["layers"][2]["o"]["rank"] = 8;  // stored factors have rank 7
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "layers[2].o: rank 8 disagrees with its factors"));
}

TEST_F(NativeCorrupt, RankDisagreeingWithPackedRows) {
  manifest_["layers"][0]["q"]["rank"] = 11;
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "layers[0].q.rows [0, 10) hold 10 rows but its rank is 11"));
}

TEST_F(NativeCorrupt, PackMembersOutOfOrder) {
  manifest_["layers"][1]["k"]["rows"] = {11, 14};
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "consecutive rows of one tensor"));
}

TEST_F(NativeCorrupt, MissingTensor) {
  manifest_["layers"][3]["down"]["second"] = "layers.3.down.nowhere";
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("model.safetensors", "tensor 'layers.3.down.nowhere' named in flashsvd.json is missing"));
}

TEST_F(NativeCorrupt, TensorNobodyReferences) {
  edit_weights([](std::vector<SafetensorsEntry>& e) { e.push_back({"stray", Tensor({2, 2}), DType::F32}); });
  EXPECT_TRUE(refuses("model.safetensors", "tensors this loader does not know: stray"));
}

TEST_F(NativeCorrupt, SharedListMustMatchTheReferences) {
  manifest_["shared"] = json::array();
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "'shared' does not list the tensors that the references share"));
}

TEST_F(NativeCorrupt, TiedFlagWithoutTiedTensors) {
  manifest_["config"]["tied_embeddings"] = true;
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "config says tied_embeddings but lm_head is not the embedding"));
}

TEST_F(NativeCorrupt, ConfigAndLayerCount) {
  manifest_["config"]["layers"] = 5;
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "layers holds 4 entries but config.layers is 5"));
  manifest_["config"]["layers"] = 4;
  manifest_["config"]["hidden"] = "36";
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "config.hidden is \"36\", not an integer"));
  manifest_["config"]["hidden"] = 36;
  manifest_["config"]["rope_scaling"].erase("factor");
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "config.rope_scaling: missing 'factor'"));
}

TEST_F(NativeCorrupt, HiddenSizeDisagreeingWithTensors) {
  manifest_["config"]["hidden"] = 33;
  write_manifest(manifest_);
  EXPECT_TRUE(fails_with([&] { load_model(dir_.path()); }, dir_.path() + ": token embedding has shape [71, 36], "
                                                                          "expected [71, 33]"));
}

TEST_F(NativeCorrupt, UnknownKeysAreRefused) {
  manifest_["layers"][0]["q"]["scale"] = 2.0;
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("flashsvd.json", "layers[0].q: unknown key 'scale'"));
}

TEST_F(NativeCorrupt, DtypeDisagreeingWithTensors) {
  manifest_["dtype"] = "BF16";
  write_manifest(manifest_);
  EXPECT_TRUE(refuses("model.safetensors", "is F32 but flashsvd.json stores matrices as BF16"));
}

TEST_F(NativeCorrupt, PackWithRowsNoMemberUses) {
  edit_weights([](std::vector<SafetensorsEntry>& entries) {
    for (SafetensorsEntry& e : entries)
      if (e.name == "layers.0.qkv.first") e.tensor = Tensor({e.tensor.dim(0) + 1, e.tensor.dim(1)});
  });
  EXPECT_TRUE(refuses("flashsvd.json", "layers[0].qkv: packed tensor 'layers.0.qkv.first' has 19 rows but its "
                                       "members use 18"));
}

TEST_F(NativeCorrupt, RowsBeyondThePack) {
  edit_weights([](std::vector<SafetensorsEntry>& entries) {
    for (SafetensorsEntry& e : entries)
      if (e.name == "layers.0.qkv.first") e.tensor = Tensor({e.tensor.dim(0) - 2, e.tensor.dim(1)});
  });
  EXPECT_TRUE(refuses("flashsvd.json", "layers[0].v: rows [13, 18) of tensor 'layers.0.qkv.first' (shape [16, 36]) "
                                       "are out of range"));
}

TEST_F(NativeCorrupt, TruncatedWeights) {
  const auto size = std::filesystem::file_size(dir_.file("model.safetensors"));
  std::filesystem::resize_file(dir_.file("model.safetensors"), size - 4);
  EXPECT_TRUE(refuses("model.safetensors", "out of range"));
}

TEST_F(NativeCorrupt, NotJson) {
  dir_.write("flashsvd.json", std::string("{\"format\": "));
  EXPECT_TRUE(refuses("flashsvd.json", "not valid JSON"));
}

// ---- A real checkpoint. ----

TEST(NativeFamily, Stories260KRoundTripsBitExactly) {
  const std::string path = test::shared_data_file("models/stories260K/stories260K.bin");
  if (path.empty()) GTEST_SKIP() << "stories260K not found";
  const Model source = load_model(path);
  const test::TempDir dir("native_stories");
  save_native(source, dir.path());
  const Model got = load_model(dir.path());
  test::expect_same_model(got, source);
  EXPECT_EQ(got.unique_params(), source.unique_params());
  EXPECT_EQ(stored_elements(dir.path()), source.unique_params());
  const std::vector<float> a = logits_of(source), b = logits_of(got);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  const NativeManifest manifest = read_native_manifest(dir.path());
  EXPECT_EQ(manifest.source_family, "llama2c");
  EXPECT_EQ(manifest.source_path, path);
}

}  // namespace
}  // namespace fsvd
