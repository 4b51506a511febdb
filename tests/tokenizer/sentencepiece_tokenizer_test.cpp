#include "tokenizer/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/error.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

std::string llama2_model() { return testing::shared_data("tokenizers/llama2/tokenizer.model"); }

TEST(SentencePieceTokenizer, MatchesPythonSentencePiece) {
  if (!std::filesystem::exists(llama2_model())) GTEST_SKIP() << "no " << llama2_model();
  const SentencePieceTokenizer tok(llama2_model());
  const auto fx = testing::read_json(testing::fixture("tokenizer/llama2_sentencepiece.json"));
  EXPECT_EQ(tok.vocab_size(), fx["vocab_size"].get<int>());
  EXPECT_EQ(tok.bos_id(), fx["bos"].get<int>());
  EXPECT_EQ(tok.eos_id(), fx["eos"].get<int>());
  EXPECT_TRUE(tok.adds_bos());
  for (const auto& c : fx["cases"]) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.encode(text, false), ids) << text;
    auto with_bos = tok.encode(text, true);
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos[0], 1);
    EXPECT_EQ(tok.decode(with_bos), text);
  }
}

// The llama2.c encoder over tokenizer.bin and SentencePiece over tokenizer.model
// are two implementations of the same model: they must agree on any text.
TEST(SentencePieceTokenizer, AgreesWithLlama2cEncoderOnRandomText) {
  const std::string bin = testing::shared_data("tokenizers/llama2/tokenizer.bin");
  if (!std::filesystem::exists(llama2_model()) || !std::filesystem::exists(bin)) GTEST_SKIP() << "no Llama-2 tokenizer";
  const SentencePieceTokenizer sp(llama2_model());
  const auto l2c = load_llama2c_tokenizer(bin);
  std::mt19937 rng(99);
  for (int trial = 0; trial < 200; ++trial) {
    const std::string text = testing::random_text(rng, 1 + trial % 40);
    ASSERT_EQ(l2c->encode(text, true), sp.encode(text, true)) << "'" << text << "'";
  }
}

TEST(SentencePieceTokenizer, ParsesControlTokensOnlyWhenAsked) {
  if (!std::filesystem::exists(llama2_model())) GTEST_SKIP() << "no " << llama2_model();
  const SentencePieceTokenizer tok(llama2_model());
  const auto special = tok.encode("[INST] hi [/INST] yo </s><s>[INST] more", false, true);
  const auto a = tok.encode("[INST] hi [/INST] yo ", false);
  const auto b = tok.encode("[INST] more", false);
  std::vector<int32_t> expected = a;
  expected.push_back(2);
  expected.push_back(1);
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(special, expected);
  const auto plain = tok.encode("</s><s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1) + std::count(plain.begin(), plain.end(), 2), 0);
}

TEST(SentencePieceTokenizer, ClearErrors) {
  EXPECT_THROW(SentencePieceTokenizer("/nonexistent/tokenizer.model"), Error);
  if (!std::filesystem::exists(llama2_model())) GTEST_SKIP() << "no " << llama2_model();
  const SentencePieceTokenizer tok(llama2_model());
  EXPECT_THROW(tok.decode({32000}), Error);
  EXPECT_THROW(tok.decode({-5}), Error);
}

}  // namespace
}  // namespace fsvd
