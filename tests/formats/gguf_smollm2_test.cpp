// The GGUF reader on a published file (SmolLM2-135M-Instruct, Q4_1 weights,
// Q8_0 embeddings, F32 norms) against values written by ggml's own Python
// reader: tests/formats/make_gguf_reference.py -> tests/fixtures/gguf/smollm2_reference.json.
// The 98 MB file is not in the repository; the test skips when it is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "testing/data_paths.h"

namespace fsvd {
namespace {

class SmolLM2Gguf : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testing::smollm2_gguf();
    if (path.empty()) return;
    file_ = new GgufFile(path);
    std::ifstream in(testing::fixture("gguf/smollm2_reference.json"));
    ref_ = new nlohmann::json(nlohmann::json::parse(in));
  }
  static void TearDownTestSuite() {
    delete file_;
    delete ref_;
    file_ = nullptr;
    ref_ = nullptr;
  }
  void SetUp() override {
    if (!file_) GTEST_SKIP() << "SmolLM2 GGUF not found (run `flashsvd pull` or set FLASHSVD_SMOLLM2_GGUF)";
  }
  static GgufFile* file_;
  static nlohmann::json* ref_;
};
GgufFile* SmolLM2Gguf::file_ = nullptr;
nlohmann::json* SmolLM2Gguf::ref_ = nullptr;

TEST_F(SmolLM2Gguf, MetadataMatchesReference) {
  const GgufFile& f = *file_;
  const nlohmann::json& ref = *ref_;
  EXPECT_EQ(f.version(), ref.at("version").get<uint32_t>());
  EXPECT_EQ(f.tensors().size(), ref.at("tensor_count").get<size_t>());
  EXPECT_EQ(f.metadata().size(), ref.at("kv_count").get<size_t>());
  for (const auto& [key, want] : ref.at("scalars").items()) {
    const GgufValue& v = f.get(key);
    if (want.is_string()) {
      EXPECT_EQ(v.as_string(key), want.get<std::string>()) << key;
    } else if (want.is_boolean()) {
      EXPECT_EQ(v.as_bool(key), want.get<bool>()) << key;
    } else if (want.is_number_integer()) {
      EXPECT_EQ(v.as_int(key), want.get<int64_t>()) << key;
    } else {
      EXPECT_EQ(v.as_float(key), want.get<double>()) << key;
    }
  }
  const GgufArray& langs = f.get("general.languages").as_array("general.languages");
  ASSERT_EQ(langs.size(), ref.at("languages").size());
  EXPECT_EQ(langs[0].as_string("general.languages"), ref.at("languages")[0].get<std::string>());

  const GgufArray& tokens = f.get("tokenizer.ggml.tokens").as_array("tokens");
  const nlohmann::json& rt = ref.at("tokens");
  ASSERT_EQ(tokens.size(), rt.at("count").get<size_t>());
  for (size_t i = 0; i < rt.at("first").size(); ++i) EXPECT_EQ(tokens[i].as_string("tokens"), rt.at("first")[i]);
  EXPECT_EQ(tokens.back().as_string("tokens"), rt.at("last").get<std::string>());

  const GgufArray& merges = f.get("tokenizer.ggml.merges").as_array("merges");
  EXPECT_EQ(merges.size(), ref.at("merges").at("count").get<size_t>());
  EXPECT_EQ(merges.at(0).as_string("merges"), ref.at("merges").at("first").get<std::string>());
  const GgufArray& types = f.get("tokenizer.ggml.token_type").as_array("token_type");
  ASSERT_EQ(types.size(), ref.at("token_type").at("count").get<size_t>());
  for (size_t i = 0; i < ref.at("token_type").at("first").size(); ++i)
    EXPECT_EQ(types[i].as_int("token_type"), ref.at("token_type").at("first")[i].get<int64_t>());
}

TEST_F(SmolLM2Gguf, TensorsMatchReference) {
  for (const auto& [name, want] : ref_->at("tensors").items()) {
    SCOPED_TRACE(name);
    const GgufTensorInfo* info = file_->find(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->type, want.at("type").get<uint32_t>());
    EXPECT_EQ(info->dims, want.at("dims").get<std::vector<int64_t>>());
    EXPECT_EQ(info->nbytes, want.at("nbytes").get<size_t>());

    const Tensor t = file_->load_f32(name);
    std::vector<int64_t> shape = info->dims;
    std::reverse(shape.begin(), shape.end());
    EXPECT_EQ(t.shape(), shape);
    const auto first = want.at("first").get<std::vector<float>>();
    const auto last = want.at("last").get<std::vector<float>>();
    const int64_t n = t.numel();
    for (size_t i = 0; i < first.size(); ++i) EXPECT_NEAR(t.data()[i], first[i], 1e-6f * std::abs(first[i])) << i;
    for (size_t i = 0; i < last.size(); ++i) {
      const float got = t.data()[n - static_cast<int64_t>(last.size()) + static_cast<int64_t>(i)];
      EXPECT_NEAR(got, last[i], 1e-6f * std::abs(last[i])) << "from the end, " << i;
    }
  }
}

// [sum, sum of magnitudes] in double precision.
std::pair<double, double> sums(const Tensor& t) {
  double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += t.data()[i];
    abs_sum += std::abs(t.data()[i]);
  }
  return {sum, abs_sum};
}

TEST_F(SmolLM2Gguf, EveryTensorMatchesReferenceSums) {
  const nlohmann::json& all = ref_->at("all_sums");
  ASSERT_EQ(all.size(), file_->tensors().size());
  for (const GgufTensorInfo& info : file_->tensors()) {
    const auto want = all.at(info.name).get<std::pair<double, double>>();
    const auto [sum, abs_sum] = sums(file_->load_f32(info.name));
    // Only the summation order differs from the reference.
    EXPECT_NEAR(sum, want.first, 1e-9 * want.second) << info.name;
    EXPECT_NEAR(abs_sum, want.second, 1e-9 * want.second) << info.name;
  }
}

}  // namespace
}  // namespace fsvd
