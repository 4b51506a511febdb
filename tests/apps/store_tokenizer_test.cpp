// A converted model keeps its tokenizer: whatever store_tokenizer writes, the
// directory loads into a tokenizer that behaves exactly as the source's.
#include "apps/store_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "families/family_test_util.h"
#include "formats/gguf.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using test::fails_with;

const std::vector<std::string> kTexts = {
    "Once upon a time, there was a little girl named Lily.",
    "  Hello,\tWORLD!  42 apples — ünïcödé 中文 😀\n\nnew paragraph",
    "<|im_start|>user\nHi there<|im_end|>",
    "",
};

void expect_same_tokenizer(const Tokenizer& got, const Tokenizer& want) {
  EXPECT_EQ(got.vocab_size(), want.vocab_size());
  EXPECT_EQ(got.bos_id(), want.bos_id());
  EXPECT_EQ(got.eos_id(), want.eos_id());
  EXPECT_EQ(got.adds_bos(), want.adds_bos());
  EXPECT_EQ(got.chat_template(), want.chat_template());
  for (const std::string& text : kTexts) {
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = want.encode(text, true, special);
      EXPECT_EQ(got.encode(text, true, special), ids) << text;
      EXPECT_EQ(got.decode(ids), want.decode(ids)) << text;
    }
  }
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(StoreTokenizer, GgufTokenizerBecomesATokenizerOnlyGguf) {
  const std::string gguf = testing::smollm2_gguf();
  if (gguf.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found";
  const test::TempDir dir("store_tok_gguf");
  EXPECT_EQ(store_tokenizer(gguf, "", dir.path()), std::vector<std::string>{"tokenizer.gguf"});
  const GgufFile stored(dir.file("tokenizer.gguf"));
  EXPECT_TRUE(stored.tensors().empty());
  for (const auto& [key, value] : stored.metadata()) EXPECT_EQ(key.rfind("tokenizer.", 0), 0u) << key;
  EXPECT_LT(fs::file_size(dir.file("tokenizer.gguf")), fs::file_size(gguf) / 10);
  expect_same_tokenizer(*load_tokenizer(dir.path(), ""), *load_tokenizer(gguf, ""));
}

TEST(StoreTokenizer, ExplicitLlama2cTokenizerIsCopied) {
  const std::string model = testing::shared_data("models/stories260K/stories260K.bin");
  const std::string tok = testing::shared_data("models/stories260K/tok512.bin");
  if (model.empty() || tok.empty()) GTEST_SKIP() << "stories260K not found";
  const test::TempDir dir("store_tok_llama2c");
  EXPECT_TRUE(store_tokenizer(model, "", dir.path()).empty()) << "a llama2.c checkpoint carries none";
  EXPECT_EQ(store_tokenizer(model, tok, dir.path()), std::vector<std::string>{"tokenizer.bin"});
  expect_same_tokenizer(*load_tokenizer(dir.path(), ""), *load_llama2c_tokenizer(tok));
}

TEST(StoreTokenizer, TokenizerJsonAndDirectoriesKeepTheirConfig) {
  const test::TempDir source("store_tok_source"), dir("store_tok_json");
  fs::copy_file(testing::fixture("tokenizer/tiny_tokenizer.json"), source.file("tokenizer.json"));
  source.write("tokenizer_config.json", std::string(R"({"chat_template": "{{ messages[0]['content'] }}"})"));
  EXPECT_EQ(store_tokenizer("unused", source.file("tokenizer.json"), dir.path()),
            (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"}));
  const auto want = load_tokenizer("", source.file("tokenizer.json"));
  EXPECT_EQ(want->chat_template(), "{{ messages[0]['content'] }}");
  expect_same_tokenizer(*load_tokenizer(dir.path(), ""), *want);
  // A directory source (a Hugging Face or native model) gives all its tokenizer files.
  const test::TempDir again("store_tok_dir");
  EXPECT_EQ(store_tokenizer(source.path(), "", again.path()),
            (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"}));
  expect_same_tokenizer(*load_tokenizer(again.path(), ""), *want);
}

TEST(StoreTokenizer, SentencePieceModelIsCopied) {
  const std::string spm = testing::shared_data("tokenizers/llama2/tokenizer.model");
  if (spm.empty()) GTEST_SKIP() << "llama2 tokenizer.model not found";
  const test::TempDir dir("store_tok_spm");
  EXPECT_EQ(store_tokenizer("unused", spm, dir.path()), std::vector<std::string>{"tokenizer.model"});
  expect_same_tokenizer(*load_tokenizer(dir.path(), ""), *load_tokenizer("", spm));
}

TEST(StoreTokenizer, OldTokenizerFilesAreReplaced) {
  const test::TempDir dir("store_tok_old");
  dir.write("tokenizer.model", std::string("stale"));
  dir.write("tokenizer_config.json", std::string("{}"));
  dir.write("model.safetensors", std::string("kept"));
  const std::string tok = testing::fixture("tokenizer/tiny_tokenizer.json");
  EXPECT_EQ(store_tokenizer("unused", tok, dir.path()), std::vector<std::string>{"tokenizer.json"});
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"model.safetensors", "tokenizer.json"}));
}

TEST(StoreTokenizer, RefusesItsOwnSourceAndMissingFiles) {
  const test::TempDir dir("store_tok_self");
  dir.write("tokenizer.json", std::string("{}"));
  EXPECT_TRUE(fails_with([&] { store_tokenizer(dir.path(), "", dir.path()); }, "is where the tokenizer comes from"));
  EXPECT_TRUE(fs::exists(dir.file("tokenizer.json")));
  EXPECT_TRUE(fails_with([&] { store_tokenizer("m", "/nonexistent/tok.bin", dir.path()); },
                         "/nonexistent/tok.bin: not found"));
}

}  // namespace
}  // namespace fsvd
