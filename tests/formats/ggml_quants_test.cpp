// Block dequantization against ggml's reference math: random blocks of every
// supported type were dequantized by the `gguf` Python package
// (tests/formats/make_gguf_reference.py) into tests/fixtures/gguf/quant_blocks.json.
#include "formats/ggml_quants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "testing/fails_with.h"
#include "formats/gguf.h"

namespace fsvd {
namespace {

using test::fails_with;

nlohmann::json load_quant_fixture() {
  const std::string path = std::string(FLASHSVD_TEST_FIXTURES) + "/gguf/quant_blocks.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing committed fixture " + path);
  return nlohmann::json::parse(in);
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(GgmlQuants, MatchesGgmlReferenceOnRandomBlocks) {
  const nlohmann::json fixture = load_quant_fixture();
  std::set<std::string> seen;
  for (const auto& c : fixture.at("cases")) {
    const auto type = c.at("type").get<uint32_t>();
    const auto name = c.at("name").get<std::string>();
    const auto n = c.at("n").get<int64_t>();
    const std::vector<uint8_t> bytes = from_hex(c.at("bytes_hex").get<std::string>());
    const auto want = c.at("values").get<std::vector<float>>();
    seen.insert(name);
    ASSERT_EQ(want.size(), static_cast<size_t>(n)) << name;
    EXPECT_EQ(ggml_type_info(type)->name, name);
    EXPECT_EQ(ggml_nbytes(type, n, name), bytes.size()) << name;

    std::vector<float> got(n, NAN);
    ggml_dequantize(type, bytes.data(), n, got.data(), name);
    int mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      // Same operation order as ggml; the tolerance only allows for FMA contraction.
      if (!(std::abs(got[i] - want[i]) <= 1e-6f * std::max(1.0f, std::abs(want[i])))) {
        if (mismatches++ < 5) ADD_FAILURE() << name << " element " << i << ": got " << got[i] << ", want " << want[i];
      }
    }
    EXPECT_EQ(mismatches, 0) << name;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"}));
}

TEST(GgmlQuants, ByteCountsFollowBlockGeometry) {
  struct Case {
    uint32_t type;
    int64_t n;
    size_t bytes;
  };
  const Case cases[] = {{0, 5, 20},    {1, 3, 6},       {30, 1, 2},      {2, 64, 36},   {3, 32, 20},
                        {8, 96, 102},  {12, 512, 288},  {13, 256, 176},  {14, 768, 630}, {2, 0, 0}};
  for (const Case& c : cases) EXPECT_EQ(ggml_nbytes(c.type, c.n, "t"), c.bytes) << ggml_type_label(c.type);
}

TEST(GgmlQuants, RejectsUnsupportedTypesAndPartialBlocks) {
  EXPECT_TRUE(fails_with([] { ggml_nbytes(2, 33, "w"); }, "w: 33 elements is not a whole number of Q4_0 blocks of 32"));
  EXPECT_TRUE(fails_with([] { ggml_nbytes(14, 128, "w"); }, "of Q6_K blocks of 256"));
  EXPECT_TRUE(fails_with([] { ggml_nbytes(0, -1, "w"); }, "-1 elements"));
  EXPECT_TRUE(fails_with([] { ggml_nbytes(0, INT64_MAX, "w"); }, "overflow the byte count"));
  EXPECT_TRUE(fails_with([] { ggml_nbytes(7, 32, "w"); }, "unsupported ggml tensor type Q5_1 (type 7)"));
  EXPECT_TRUE(fails_with([] { ggml_nbytes(4, 32, "w"); }, "unsupported ggml tensor type unknown type 4"));
  float out[32];
  const uint8_t block[34] = {};
  EXPECT_TRUE(fails_with([&] { ggml_dequantize(6, block, 32, out, "w"); }, "Q5_0 (type 6)"));
  EXPECT_TRUE(fails_with([&] { ggml_dequantize(8, block, 31, out, "w"); }, "not a whole number of Q8_0 blocks"));
}

TEST(GgmlQuants, TypeTableNamesAndLabels) {
  EXPECT_STREQ(ggml_type_info(12)->name, "Q4_K");
  EXPECT_EQ(ggml_type_info(12)->block_bytes, 144u);
  EXPECT_TRUE(ggml_type_info(13)->dequantizable);
  EXPECT_FALSE(ggml_type_info(11)->dequantizable);
  EXPECT_EQ(ggml_type_info(5), nullptr);  // ids 4 and 5 were retired by ggml
  EXPECT_EQ(ggml_type_label(3), "Q4_1 (type 3)");
  EXPECT_EQ(ggml_type_label(1000), "unknown type 1000");
}

// Large tensors take the multi-threaded path; it must agree with block-by-block results.
TEST(GgmlQuants, LargeTensorsMatchBlockByBlock) {
  constexpr int64_t kBlocks = 5003;
  std::mt19937 rng(11);
  std::vector<uint8_t> bytes(kBlocks * 210);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < kBlocks; ++i) {  // finite fp16 scale d at the end of each Q6_K block
    bytes[i * 210 + 208] = static_cast<uint8_t>(rng());
    bytes[i * 210 + 209] = static_cast<uint8_t>(0x10 + rng() % 0x20);
  }
  std::vector<float> whole(kBlocks * 256);
  ggml_dequantize(14, bytes.data(), kBlocks * 256, whole.data(), "q6k");
  std::vector<float> one(256);
  for (int64_t i = 0; i < kBlocks; i += 97) {
    ggml_dequantize(14, bytes.data() + i * 210, 256, one.data(), "q6k");
    ASSERT_EQ(std::vector<float>(whole.begin() + i * 256, whole.begin() + (i + 1) * 256), one) << "block " << i;
  }
}

}  // namespace
}  // namespace fsvd
