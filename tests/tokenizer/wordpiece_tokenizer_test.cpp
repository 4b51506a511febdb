#include "tokenizer/wordpiece_tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "testing/fails_with.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;
using test::fails_with;

// A vocabulary small enough to reason about: ids in line order.
WordPieceTokenizer tiny(bool lowercase = true) {
  const std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nhello\n,\n!\n##s\nwords\n";
  WordPieceOptions o;
  o.basic.lowercase = o.basic.strip_accents = lowercase;
  return WordPieceTokenizer(parse_vocab_txt(vocab, "tiny"), o, "tiny");
}

TEST(WordPieceTokenizer, GreedyLongestMatchFirst) {
  const WordPieceTokenizer tok = tiny();
  EXPECT_EQ(tok.tokenize("unaffable"), (Ids{5, 6, 7}));
  EXPECT_EQ(tok.tokenize("Hello, WORDS!"), (Ids{8, 9, 12, 10}));
  EXPECT_EQ(tok.tokenize("unaffablex hello"), (Ids{1, 8}));  // one piece missing: the whole word is [UNK]
  EXPECT_EQ(tok.tokenize("[SEP]hello[MASK]"), (Ids{3, 8, 4}));  // specials matched before lower-casing
  EXPECT_EQ(tok.tokenize("[sep]"), (Ids{1, 1, 1}));            // ... and only verbatim
  EXPECT_EQ(tiny(false).tokenize("Hello hello"), (Ids{1, 8}));
}

TEST(WordPieceTokenizer, PairsTypesAndTruncation) {
  const WordPieceTokenizer tok = tiny();
  const EncoderInput single = tok.encode("hello words", std::nullopt, 0);
  EXPECT_EQ(single.ids, (Ids{2, 8, 12, 3}));
  EXPECT_EQ(single.type_ids, (Ids{0, 0, 0, 0}));
  const EncoderInput pair = tok.encode("hello", "words !", 0);
  EXPECT_EQ(pair.ids, (Ids{2, 8, 3, 12, 10, 3}));
  EXPECT_EQ(pair.type_ids, (Ids{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(tok.encode("hello words hello", std::nullopt, 4).ids, (Ids{2, 8, 12, 3}));
  EXPECT_EQ(tok.encode("hello hello hello", "words", 6).ids, (Ids{2, 8, 8, 3, 12, 3}));  // longer side cut
  EXPECT_TRUE(fails_with([&] { tok.encode("hello", "words", 4); }, "no room"));
}

TEST(WordPieceTokenizer, BadVocabularies) {
  EXPECT_TRUE(fails_with([] { WordPieceTokenizer(parse_vocab_txt("a\nb\n", "v"), {}, "v"); }, "no '[UNK]'"));
  EXPECT_TRUE(fails_with([] { parse_vocab_txt("", "v"); }, "empty"));
  EXPECT_TRUE(fails_with([] { wordpiece_from_json(R"({"model": {"type": "BPE"}})", "t.json"); }, "not WordPiece"));
  EXPECT_TRUE(fails_with([] { wordpiece_from_json("{", "t.json"); }, "invalid JSON"));
  EXPECT_TRUE(fails_with(
      [] {
        wordpiece_from_json(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}},
                                "normalizer": {"type": "NFC"}})", "t.json");
      },
      "normalizer 'NFC'"));
}

// A tokenizer.json's post-processor frames the texts (TemplateProcessing, BertProcessing),
// read by the same code as RoBERTa's; ids from tokenizers (tests/tokenizer/make_roberta_cases.py).
TEST(WordPieceTokenizer, TemplatesMatchHuggingFace) {
  const json wordpiece = testing::read_json(testing::fixture("tokenizer/roberta_bpe_cases.json"))["wordpiece"];
  ASSERT_GE(wordpiece["templates"].size(), 3u);
  for (const json& t : wordpiece["templates"]) {
    json j = wordpiece["tokenizer"];
    j["post_processor"] = t["post_processor"];
    testing::expect_framed(wordpiece_from_json(j.dump(), "wp.json"), t["pairs"], t["name"]);
  }
  json j = wordpiece["tokenizer"];
  j["post_processor"] = {{"type", "BertProcessing"}, {"cls", {"[CLS]", 2}}, {"sep", {"[SEP]", 99}}};
  EXPECT_TRUE(fails_with([&] { wordpiece_from_json(j.dump(), "wp.json"); }, "special token id 99 is outside"));
  j["post_processor"] = nullptr;  // none: BERT's framing by the token names
  EXPECT_EQ(wordpiece_from_json(j.dump(), "wp.json").encode("a", "b", 0).ids, (Ids{2, 14, 3, 15, 3}));
}

// The fixture's ids come from transformers' BertTokenizerFast (tests/tokenizer/make_wordpiece_fixture.py).
class BertWordPiece : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = testing::read_json(testing::fixture("tokenizer/bert_wordpiece.json"));
    vocab_ = testing::shared_data(fixture_["vocab"]);
    if (vocab_.empty()) GTEST_SKIP() << "shared data " << fixture_["vocab"] << " not found";
  }
  WordPieceTokenizer make(bool lowercase) const {
    WordPieceOptions o;
    o.basic.lowercase = o.basic.strip_accents = lowercase;
    return WordPieceTokenizer(parse_vocab_txt(testing::read_file(vocab_), vocab_), o, vocab_);
  }
  json fixture_;
  std::string vocab_;
};

TEST_F(BertWordPiece, MatchesHuggingFaceOnMultilingualText) {
  const WordPieceTokenizer uncased = make(true), cased = make(false);
  ASSERT_GE(fixture_["cases"].size(), 30u);
  for (const json& c : fixture_["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(uncased.tokenize(text), c["ids_uncased"].get<Ids>()) << text;
    EXPECT_EQ(cased.tokenize(text), c["ids_cased"].get<Ids>()) << text;
  }
}

TEST_F(BertWordPiece, MatchesHuggingFaceOnPairsWithTruncation) {
  const WordPieceTokenizer tok = make(true);
  for (const json& p : fixture_["pairs"]) {
    const std::string a = p["a"];
    std::optional<std::string> b;
    if (!p["b"].is_null()) b = p["b"].get<std::string>();
    const EncoderInput in = tok.encode(a, b, p["max_tokens"]);
    EXPECT_EQ(in.ids, p["ids"].get<Ids>()) << a;
    EXPECT_EQ(in.type_ids, p["type_ids"].get<Ids>()) << a;
  }
}

TEST_F(BertWordPiece, RandomTextGivesIdsInRange) {
  const WordPieceTokenizer tok = make(true);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const std::string text = testing::random_text(rng, 40, true);
    for (int32_t id : tok.encode(text, text.substr(0, text.size() / 2), 64).ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tok.vocab_size());
    }
  }
}

}  // namespace
}  // namespace fsvd
