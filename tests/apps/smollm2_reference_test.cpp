// The default model against Hugging Face transformers (fp32, on an H200):
// tokenizer ids, chat template text, logits and a 32-token greedy continuation.
// Fixture: tests/fixtures/smollm2/reference.json, made by
// tests/reference/make_smollm2_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_executor.h"
#include "families/load.h"
#include "testing/data_paths.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {
namespace {

class SmolLM2Reference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testing::smollm2_gguf();
    if (path.empty()) return;
    model_ = new Model(load_model(path));
    tokenizer_ = load_tokenizer(path, "").release();
    std::ifstream in(testing::fixture("smollm2/reference.json"));
    reference_ = new nlohmann::json(nlohmann::json::parse(in));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
    delete reference_;
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "SmolLM2 GGUF not found (run `flashsvd pull` or set FLASHSVD_SMOLLM2_GGUF)";
  }
  static std::vector<int32_t> our_tokens(const nlohmann::json& c) {
    if (c.contains("chat")) {
      std::vector<ChatMessage> messages;
      for (const auto& m : c["chat"]) messages.push_back({m["role"], m["content"]});
      const std::string text = apply_chat_template(*tokenizer_, messages, true);
      EXPECT_EQ(text, c["formatted"].get<std::string>());
      return tokenizer_->encode(text, tokenizer_->adds_bos(), true);
    }
    return tokenizer_->encode(c["text"].get<std::string>(), tokenizer_->adds_bos());
  }

  static Model* model_;
  static Tokenizer* tokenizer_;
  static nlohmann::json* reference_;
};
Model* SmolLM2Reference::model_ = nullptr;
Tokenizer* SmolLM2Reference::tokenizer_ = nullptr;
nlohmann::json* SmolLM2Reference::reference_ = nullptr;

TEST_F(SmolLM2Reference, TokenizerMatchesTransformers) {
  for (const auto& c : (*reference_)["cases"])
    EXPECT_EQ(our_tokens(c), c["tokens"].get<std::vector<int32_t>>()) << c["formatted"];
}

TEST_F(SmolLM2Reference, LogitsMatchTransformersWithin1e4) {
  const int64_t vocab = model_->config.vocab;
  for (const auto& c : (*reference_)["cases"]) {
    const auto ids = c["tokens"].get<std::vector<int32_t>>();
    CpuExecutor executor(*model_, static_cast<int>(ids.size()), 0);
    std::vector<float> logits;
    executor.forward(ids, 0, true, logits);
    double diff2 = 0, ref2 = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      const auto& p = c["positions"][t];
      const auto idx = p["ids"].get<std::vector<int64_t>>();
      const auto ref = p["logits"].get<std::vector<double>>();
      for (size_t i = 0; i < idx.size(); ++i) {
        const double ours = logits[t * vocab + idx[i]];
        diff2 += (ours - ref[i]) * (ours - ref[i]);
        ref2 += ref[i] * ref[i];
      }
      const float* row = &logits[t * vocab];
      EXPECT_EQ(std::max_element(row, row + vocab) - row, p["argmax"].get<int64_t>()) << "position " << t;
    }
    EXPECT_LT(std::sqrt(diff2 / ref2), 1e-4) << c["formatted"];
  }
}

TEST_F(SmolLM2Reference, GreedyContinuationMatchesFor32Tokens) {
  for (const auto& c : (*reference_)["cases"]) {
    auto ids = c["tokens"].get<std::vector<int32_t>>();
    const auto expected = c["greedy"].get<std::vector<int32_t>>();
    CpuExecutor executor(*model_, static_cast<int>(ids.size() + expected.size()), 0);
    std::vector<float> logits;
    executor.forward(ids, 0, false, logits);
    std::vector<int32_t> ours;
    for (size_t step = 0; step < expected.size(); ++step) {
      const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      ours.push_back(next);
      executor.forward(std::span(&next, 1), static_cast<int>(ids.size() + step), false, logits);
    }
    EXPECT_EQ(ours, expected) << c["formatted"];
  }
}

}  // namespace
}  // namespace fsvd
