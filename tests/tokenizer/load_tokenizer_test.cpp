#include "tokenizer/load_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tokenizer_test_util.h"
#include "testing/files.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

class LoadTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::unique_temp_path("fsvd_tok");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST_F(LoadTokenizer, HuggingFaceDirectoryWithTokenizerJson) {
  write("tokenizer.json", testing::read_file(testing::fixture("tokenizer/tiny_tokenizer.json")));
  write("tokenizer_config.json", R"({"eos_token": "<|im_end|>", "chat_template": "<|im_start|>"})");
  write("config.json", "{}");
  const auto from_dir = load_tokenizer(dir_.string(), "");
  const auto from_file = load_tokenizer("ignored", (dir_ / "tokenizer.json").string());
  for (const Tokenizer* tok : {from_dir.get(), from_file.get()}) {
    EXPECT_EQ(tok->vocab_size(), 27);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->chat_template(), "<|im_start|>");
    EXPECT_EQ(tok->encode("hello world", false), (std::vector<int32_t>{18, 23}));
  }
}

TEST_F(LoadTokenizer, ExplicitFilesByKind) {
  const std::string bin = testing::shared_data("tokenizers/llama2/tokenizer.bin");
  const std::string model = testing::shared_data("tokenizers/llama2/tokenizer.model");
  if (!fs::exists(bin) || !fs::exists(model)) GTEST_SKIP() << "no Llama-2 tokenizer in shared data";
  const auto from_bin = load_tokenizer("model.bin", bin);
  const auto from_model = load_tokenizer("model.bin", model);
  EXPECT_EQ(from_bin->vocab_size(), 32000);
  EXPECT_EQ(from_model->vocab_size(), 32000);
  EXPECT_EQ(from_bin->encode("Grüße, 世界", true), from_model->encode("Grüße, 世界", true));
  EXPECT_EQ(from_model->chat_template(), "");
  // A directory holding tokenizer.model prefers it, with the chat template of its tokenizer_config.json.
  fs::copy_file(model, dir_ / "tokenizer.model");
  write("tokenizer.json", "{}");
  write("tokenizer_config.json", R"({"chat_template": "[INST]"})");
  const auto from_dir = load_tokenizer(dir_.string(), "");
  EXPECT_EQ(from_dir->encode("hi there", true), from_model->encode("hi there", true));
  EXPECT_EQ(from_dir->chat_template(), "[INST]");
}

TEST_F(LoadTokenizer, GgufModelCarriesItsTokenizer) {
  const std::string gguf = testing::smollm2_gguf();
  if (gguf.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (set FLASHSVD_SMOLLM2_GGUF)";
  EXPECT_EQ(load_tokenizer(gguf, "")->vocab_size(), 49152);
  EXPECT_EQ(load_tokenizer("other.bin", gguf)->vocab_size(), 49152);
}

TEST_F(LoadTokenizer, ClearErrors) {
  const std::string llama2c_model = testing::shared_data("models/stories260K/stories260K.bin");
  if (fs::exists(llama2c_model)) {
    try {
      load_tokenizer(llama2c_model, "");
      FAIL() << "a llama2.c checkpoint has no tokenizer";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--tokenizer"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_tokenizer((dir_ / "missing.bin").string(), ""), Error);
  EXPECT_THROW(load_tokenizer("m", (dir_ / "missing.model").string()), Error);
  EXPECT_THROW(load_tokenizer(dir_.string(), ""), Error);  // directory without tokenizer files
  write("garbage.model", "not a sentencepiece model");
  EXPECT_THROW(load_tokenizer("m", (dir_ / "garbage.model").string()), Error);
  write("garbage.gguf", "GGUF\x03");
  EXPECT_THROW(load_tokenizer("m", (dir_ / "garbage.gguf").string()), Error);
}

}  // namespace
}  // namespace fsvd
