#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "core/error.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using Words = std::vector<std::string>;

Words split(const std::string& pre, const std::string& text) {
  return Pretokenizer(pretokenize_steps_for(pre, "test"), "test").split(text);
}

// Expected words from Hugging Face tokenizers' pre_tokenize_str with the same pre-tokenizers.
TEST(Pretokenizer, GptTwo) {
  EXPECT_EQ(split("gpt-2", "Hello world's 123  foo\n"),
            (Words{"Hello", " world", "'s", " 123", " ", " foo", "\n"}));
  EXPECT_EQ(split("gpt-2", "I'M here\tnow!!"), (Words{"I", "'", "M", " here", "\t", "now", "!!"}));
  EXPECT_EQ(split("gpt-2", "Grüße 中文"), (Words{"Grüße", " 中文"}));
}

TEST(Pretokenizer, SmolLmSplitsEveryDigit) {
  EXPECT_EQ(split("smollm", "Hello world's 123  foo\n"),
            (Words{"Hello", " world", "'s", " ", "1", "2", "3", " ", " foo", "\n"}));
  EXPECT_EQ(split("smollm", "x12345y"), (Words{"x", "1", "2", "3", "4", "5", "y"}));
}

TEST(Pretokenizer, LlamaThreeGroupsDigitsInThrees) {
  EXPECT_EQ(split("llama-bpe", "x12345y"), (Words{"x", "123", "45", "y"}));
  EXPECT_EQ(split("llama-bpe", "I'M here\tnow!!"), (Words{"I", "'M", " here", "\tnow", "!!"}));
}

TEST(Pretokenizer, WordsConcatenateToTheInputEvenForInvalidUtf8) {
  std::mt19937 rng(11);
  for (const char* pre : {"gpt-2", "smollm", "llama-bpe", "qwen2"}) {
    const Pretokenizer p(pretokenize_steps_for(pre, "test"), "test");
    for (int trial = 0; trial < 40; ++trial) {
      const std::string text = testing::random_text(rng, 5 + trial, /*invalid=*/true);
      const Words words = p.split(text);
      EXPECT_EQ(std::accumulate(words.begin(), words.end(), std::string()), text) << pre;
      for (const auto& w : words) EXPECT_FALSE(w.empty()) << pre;
    }
  }
}

TEST(Pretokenizer, PrefixSpaceAndLiteralSteps) {
  const Pretokenizer p({{"a.b", true, false}, {"", false, true}}, "test");
  // The literal "a.b" is isolated; "axb" does not match it. Then every piece gets a leading space.
  EXPECT_EQ(p.split("xa.byaxb"), (Words{" x", " a.b", " yaxb"}));
}

TEST(Pretokenizer, ClearErrors) {
  EXPECT_THROW(pretokenize_steps_for("no-such-pre", "f.gguf"), Error);
  EXPECT_THROW(Pretokenizer({{"(unclosed", false, false}}, "f.json"), Error);
}

}  // namespace
}  // namespace fsvd
