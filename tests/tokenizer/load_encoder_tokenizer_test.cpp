#include "tokenizer/load_encoder_tokenizer.h"

#include <gtest/gtest.h>

#include "families/family_test_util.h"
#include "testing/fails_with.h"
#include "tokenizer/roberta_tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using test::fails_with;

bool is_wordpiece(const EncoderTokenizer& t) { return dynamic_cast<const WordPieceTokenizer*>(&t) != nullptr; }
bool is_roberta(const EncoderTokenizer& t) { return dynamic_cast<const RobertaTokenizer*>(&t) != nullptr; }

TEST(LoadEncoderTokenizer, PicksByTokenizerType) {
  test::TempDir dir("encoder_tokenizer");
  const std::string roberta = testing::read_file(testing::fixture("tokenizer/roberta_bpe_tokenizer.json"));
  dir.write("tokenizer.json", roberta);
  dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");  // tokenizer.json wins
  EXPECT_TRUE(is_roberta(*load_encoder_tokenizer(dir.path())));
  dir.write("tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2}}})");
  EXPECT_TRUE(is_wordpiece(*load_encoder_tokenizer(dir.path())));
  dir.write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  EXPECT_TRUE(fails_with([&] { load_encoder_tokenizer(dir.path()); },
                         "tokenizer model type \"Unigram\" is not supported for encoders"));
  dir.write("tokenizer.json", "[]");
  EXPECT_TRUE(fails_with([&] { load_encoder_tokenizer(dir.path()); }, "model type null"));

  std::filesystem::remove(dir.file("tokenizer.json"));
  EXPECT_TRUE(is_wordpiece(*load_encoder_tokenizer(dir.path())));
  std::filesystem::remove(dir.file("vocab.txt"));
  EXPECT_TRUE(fails_with([&] { load_encoder_tokenizer(dir.path()); },
                         "no tokenizer.json, vocab.txt or vocab.json + merges.txt"));
  const nlohmann::json model = nlohmann::json::parse(roberta)["model"];
  dir.write("vocab.json", model["vocab"].dump());
  EXPECT_TRUE(fails_with([&] { load_encoder_tokenizer(dir.path()); }, "no tokenizer.json"));  // merges.txt too
  dir.write("merges.txt", "#version: 0.2\n");
  EXPECT_TRUE(is_roberta(*load_encoder_tokenizer(dir.path())));
}

}  // namespace
}  // namespace fsvd
