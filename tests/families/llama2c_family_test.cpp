#include "families/llama2c_family.h"

#include <gtest/gtest.h>

#include "testing/fails_with.h"
#include "families/load.h"
#include "family_test_util.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using test::fails_with;

constexpr const char* kStories = "models/stories260K/stories260K.bin";

// A random model in Hugging Face layout that fits llama2.c (head_dim = dim / heads, no biases).
Model random_llama2c_model(bool tied, uint64_t seed) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(/*hidden=*/30, /*intermediate=*/47, /*layers=*/3, /*heads=*/5,
                                      /*kv_heads=*/1, /*head_dim=*/6, /*vocab=*/37, /*max_seq=*/19);
  spec.config.tied_embeddings = tied;
  spec.pack = false;
  spec.seed = seed;
  Model m = testing::random_model(spec);
  m.config.rope_theta = 10000.0f;
  m.config.rms_eps = 1e-5f;
  return m;
}

TEST(Llama2cFamily, LoadsStories260K) {
  const std::string path = test::shared_data_file(kStories);
  if (path.empty()) GTEST_SKIP() << kStories << " not found under " << FLASHSVD_SHARED_DATA;
  EXPECT_EQ(detect_family(path), "llama2c");
  const Model m = load_model(path);
  EXPECT_EQ(m.family, "llama2c");
  EXPECT_EQ(m.source, path);
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.intermediate, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab, 512);
  EXPECT_EQ(c.max_seq, 512);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(m.lm_head.first.storage_id(), m.embed.storage_id());
  // embed 512*64 + 5 layers * (2*64 norms + 64*64*2 q,o + 32*64*2 k,v + 3*172*64 mlp) + 64 final norm.
  EXPECT_EQ(m.unique_params(), 260032);
  EXPECT_EQ(m.layers[0].qkv.first.dim(0), 64 + 32 + 32);  // packed by load_model
}

TEST(Llama2cFamily, StoredOrderAndRopeRowsRecoveredForBothVersions) {
  for (int version : {0, 1}) {
    for (bool tied : {true, false}) {
      SCOPED_TRACE("version " + std::to_string(version) + (tied ? " tied" : " untied"));
      const Model want = random_llama2c_model(tied, 11 + version * 2 + tied);
      const test::ByteVec bytes = test::llama2c_bytes(want, version);
      const Model got = llama2c_to_model(Llama2cFile(bytes.data(), bytes.size(), "mem.bin"));
      test::expect_same_model(got, want);
      EXPECT_EQ(got.lm_head.first.storage_id() == got.embed.storage_id(), tied);
    }
  }
}

TEST(Llama2cFamily, RejectsFilesOfTheWrongSize) {
  const Model m = random_llama2c_model(true, 5);
  test::ByteVec bytes = test::llama2c_bytes(m, 0);
  const size_t good = bytes.size();
  const test::TempDir dir("llama2c_sizes");
  bytes.resize(good - 4);
  dir.write("short.bin", bytes);
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("short.bin"), {.family = "llama2c"}); },
                         "is " + std::to_string(good - 4) + " bytes, but its header"));
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("short.bin"), {.family = "llama2c"}); },
                         "implies " + std::to_string(good) + " bytes"));
  // Detection tries every family and says why each refused.
  EXPECT_TRUE(fails_with([&] { detect_family(dir.file("short.bin")); }, "llama2c: "));
  bytes.resize(good + 8, 0);
  dir.write("long.bin", bytes);
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("long.bin")); }, "implies " + std::to_string(good)));
  // fp16 weights are not a llama2.c format: half the expected size.
  bytes.resize(28 + (good - 28) / 2);
  dir.write("half.bin", bytes);
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("half.bin"), {.family = "llama2c"}); }, "implies"));
}

TEST(Llama2cFamily, RejectsInt8Version2) {
  test::ByteVec bytes = test::llama2c_bytes(random_llama2c_model(true, 6), 1);
  bytes[4] = 2;
  const test::TempDir dir("llama2c_v2");
  dir.write("q80.bin", bytes);
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("q80.bin"), {.family = "llama2c"}); }, "int8"));
}

}  // namespace
}  // namespace fsvd
