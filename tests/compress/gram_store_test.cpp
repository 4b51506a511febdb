#include "compress/gram_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "testing/fails_with.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using test::fails_with;

Model dense_model(uint64_t seed = 21) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(32, 48, 3, 4, 2, 8, 64, 64);
  spec.seed = seed;
  return testing::random_model(spec);
}

std::vector<int32_t> random_tokens(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, 63);
  std::vector<int32_t> ids(n);
  for (int32_t& t : ids) t = dist(rng);
  return ids;
}

LayerGrams random_layer(const GramStoreKey& key, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist;
  LayerGrams layer;
  for (int64_t dim : key.dims) {
    std::vector<float> rows(5 * dim);
    for (float& v : rows) v = dist(rng);
    layer.emplace_back(dim);
    layer.back().add(rows.data(), 5);
  }
  return layer;
}

class GramStore : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("flashsvd_grams_" + std::to_string(::getpid()))).string();
  }
  void TearDown() override {
    fs::remove(path_);
    fs::remove(path_ + ".tmp");
  }
  std::string path_;
};

TEST_F(GramStore, RoundTripsEveryLayerExactly) {
  const Model dense = dense_model();
  const GramStoreKey key = gram_store_key(dense, random_tokens(100, 1), 32);
  ASSERT_EQ(key.dims, (std::vector<int64_t>{32, 32, 32, 48}));
  GramStoreWriter writer(path_, key);
  for (int l = 0; l < key.layers; ++l) writer.add(random_layer(key, l));
  EXPECT_FALSE(fs::exists(path_));  // only once complete
  writer.commit();

  GramStoreReader reader(path_, key);
  for (int l = key.layers - 1; l >= 0; --l) {  // any order
    const LayerGrams want = random_layer(key, l), got = reader.layer(l);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].rows(), 5);
      EXPECT_EQ(got[i].lower(), want[i].lower()) << "layer " << l << " input " << i;
    }
  }
}

TEST_F(GramStore, KeyTellsModelsTokensAndWindowsApart) {
  const Model dense = dense_model();
  const std::vector<int32_t> tokens = random_tokens(100, 1);
  const GramStoreKey key = gram_store_key(dense, tokens, 32);
  EXPECT_EQ(gram_store_key(dense, tokens, 32), key);
  EXPECT_NE(gram_store_key(dense_model(22), tokens, 32), key);
  EXPECT_NE(gram_store_key(dense, random_tokens(100, 2), 32), key);
  EXPECT_NE(gram_store_key(dense, tokens, 16), key);
}

TEST_F(GramStore, RefusesForeignTruncatedOrIncompleteFiles) {
  const Model dense = dense_model();
  const GramStoreKey key = gram_store_key(dense, random_tokens(100, 1), 32);
  {
    GramStoreWriter writer(path_, key);
    writer.add(random_layer(key, 0));
    EXPECT_TRUE(fails_with([&] { writer.commit(); }, "only 1 of 3 layers"));
    for (int l = 1; l < key.layers; ++l) writer.add(random_layer(key, l));
    EXPECT_TRUE(fails_with([&] { writer.add(random_layer(key, 9)); }, "do not fit"));
    writer.commit();
  }
  EXPECT_TRUE(fails_with([&] { GramStoreReader(path_, gram_store_key(dense, random_tokens(100, 2), 32)); },
                         "not those of this model and calibration"));
  fs::resize_file(path_, fs::file_size(path_) - 8);
  EXPECT_TRUE(fails_with([&] { GramStoreReader(path_, key); }, "bytes, expected"));
  std::ofstream(path_) << "not statistics at all";
  EXPECT_TRUE(fails_with([&] { GramStoreReader(path_, key); }, "not a flashsvd calibration statistics file"));
  fs::remove(path_);
  EXPECT_TRUE(fails_with([&] { GramStoreReader(path_, key); }, "cannot open"));
}

// The compressor with a statistics file: the first run writes it, later runs
// (other ratios, loss allocation's two passes) read it instead of calibrating,
// and the factors are the same as without it.
TEST_F(GramStore, CompressionsShareOneCalibration) {
  const Model dense = dense_model();
  const std::vector<int32_t> tokens = random_tokens(120, 3);
  for (RankAllocation allocation : {RankAllocation::Uniform, RankAllocation::Loss}) {
    fs::remove(path_);
    CompressOptions plain;
    plain.keep = 0.5;
    plain.window = 32;
    plain.threads = 1;
    plain.allocation = allocation;
    CompressOptions cached = plain;
    cached.stats_path = path_;
    int calibrations = 0;
    cached.progress = [&](const std::string& line) { calibrations += line.rfind("calibrating", 0) == 0; };

    const Compressed want = compress_model(dense, tokens, plain);
    const Compressed first = compress_model(dense, tokens, cached);
    EXPECT_EQ(calibrations, 1);  // loss allocation too: its second pass reads the file
    EXPECT_TRUE(fs::exists(path_));
    const Compressed second = compress_model(dense, tokens, cached);
    EXPECT_EQ(calibrations, 1);
    EXPECT_EQ(second.provenance["calibration"]["statistics_file"], path_);
    for (const Compressed* c : {&first, &second}) {
      EXPECT_EQ(c->provenance["ranks"], want.provenance["ranks"]);
      for (size_t l = 0; l < dense.layers.size(); ++l) {
        const Tensor& a = c->model.layers[l].down.first;
        const Tensor& b = want.model.layers[l].down.first;
        ASSERT_EQ(a.numel(), b.numel());
        for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data()[i], b.data()[i]) << l << " " << i;
      }
    }
    // Other calibration tokens do not match the file.
    EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(120, 4), cached); }, "not those of this model"));
  }
}

}  // namespace
}  // namespace fsvd
