#include "tokenizer/roberta_tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "families/family_test_util.h"
#include "testing/fails_with.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;
using test::fails_with;

// The fixture's ids come from Hugging Face tokenizers (tests/tokenizer/make_roberta_fixture.py).
class RobertaBpe : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = testing::read_json(testing::fixture("tokenizer/roberta_bpe.json"));
    path_ = testing::fixture(fixture_["tokenizer"]);
    tokenizer_ = testing::read_json(path_);
  }
  RobertaTokenizer from_json(bool add_prefix_space = false) const {
    json j = tokenizer_;
    j["pre_tokenizer"]["add_prefix_space"] = add_prefix_space;
    return roberta_from_json(j.dump(), path_);
  }
  // The tokenizer as transformers' older files: vocab.json + merges.txt (+ `config` as tokenizer_config.json).
  void write_vocab_merges(const test::TempDir& dir, const json& config = json::object()) const {
    dir.write("vocab.json", tokenizer_["model"]["vocab"].dump());
    dir.write("merges.txt", testing::merges_txt(tokenizer_));
    if (!config.empty()) dir.write("tokenizer_config.json", config.dump());
  }
  void expect_matches(const RobertaTokenizer& tok, const char* ids_key) const {
    ASSERT_GE(fixture_["cases"].size(), 30u);
    for (const json& c : fixture_["cases"]) {
      const std::string text = c["text"];
      EXPECT_EQ(tok.tokenize(text), c[ids_key].get<Ids>()) << text;
    }
    for (const json& p : fixture_["pairs"]) {
      const std::string a = p["a"];
      std::optional<std::string> b;
      if (!p["b"].is_null()) b = p["b"].get<std::string>();
      const EncoderInput in = tok.encode(a, b, p["max_tokens"]);
      EXPECT_EQ(in.ids, p["ids"].get<Ids>()) << a;
      EXPECT_EQ(in.type_ids, p["type_ids"].get<Ids>()) << a;
    }
  }
  json fixture_, tokenizer_;
  std::string path_;
};

TEST_F(RobertaBpe, TokenizerJsonMatchesHuggingFace) { expect_matches(from_json(), "ids"); }

TEST_F(RobertaBpe, PrefixSpaceMatchesHuggingFace) {
  const RobertaTokenizer tok = from_json(true);
  for (const json& c : fixture_["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.tokenize(text), c["ids_prefix_space"].get<Ids>()) << text;
  }
}

// transformers' conversion of the same files gives the same ids (checked by the fixture's generator).
TEST_F(RobertaBpe, VocabAndMergesMatchHuggingFace) {
  test::TempDir dir("roberta_vocab_merges");
  write_vocab_merges(dir);
  expect_matches(load_roberta_vocab_merges(dir.path()), "ids");
  write_vocab_merges(dir, {{"add_prefix_space", true}});
  const RobertaTokenizer prefixed = load_roberta_vocab_merges(dir.path());
  for (const json& c : fixture_["cases"])
    EXPECT_EQ(prefixed.tokenize(c["text"].get<std::string>()), c["ids_prefix_space"].get<Ids>());
}

// special_tokens_map.json overrides tokenizer_config.json; an object keeps its own strip flags.
TEST_F(RobertaBpe, VocabAndMergesSpecialTokens) {
  test::TempDir dir("roberta_specials");
  write_vocab_merges(dir, {{"cls_token", "<pad>"}});
  dir.write("special_tokens_map.json",
            R"({"cls_token": "<unk>", "mask_token": {"content": "<mask>", "lstrip": false}})");
  const RobertaTokenizer tok = load_roberta_vocab_merges(dir.path());
  EXPECT_EQ(tok.encode("x", std::nullopt, 0).ids, (Ids{3, 92, 2}));
  EXPECT_EQ(tok.tokenize(" <mask>"), (Ids{225, 4}));  // the space stays its own token
  dir.write("special_tokens_map.json", R"({"sep_token": "<new>", "pad_token": "<new2>"})");  // appended
  const RobertaTokenizer appended = load_roberta_vocab_merges(dir.path());
  EXPECT_EQ(appended.encode("x", std::nullopt, 0).ids, (Ids{1, 92, 600}));
  EXPECT_EQ(appended.tokenize("<new2>"), (Ids{601}));
  dir.write("special_tokens_map.json", R"({"sep_token": null})");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "sep_token must not be null"));
  dir.write("special_tokens_map.json", R"({"mask_token": {"lstrip": true}})");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "'mask_token' is neither"));
  dir.write("special_tokens_map.json", R"({"mask_token": {"content": "<mask>", "lstrip": 3}})");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "vocab.json + merges.txt"));
  dir.write("special_tokens_map.json", "{}");
  dir.write("merges.txt", "#version: 0.2\nĠ t\nnot_a_token x\n");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "merge 1 'not_a_token x'"));
}

TEST_F(RobertaBpe, BadTokenizerJson) {
  auto fails = [&](const std::function<void(json&)>& edit, const std::string& message) {
    json j = tokenizer_;
    edit(j);
    return fails_with([&] { roberta_from_json(j.dump(), "t.json"); }, message);
  };
  EXPECT_TRUE(fails([](json& j) { j.erase("post_processor"); }, "post_processor 'none' is not supported"));
  EXPECT_TRUE(fails([](json& j) { j["post_processor"] = {{"type", "TemplateProcessing"}}; },
                    "post_processor 'TemplateProcessing' is not supported with a BPE model"));
  EXPECT_TRUE(fails([](json& j) { j["post_processor"]["cls"] = {"<s>", 600}; }, "special token id 600 is outside"));
  EXPECT_TRUE(fails([](json& j) { j["post_processor"]["sep"] = "</s>"; }, "'sep' is not a [token, id] pair"));
  EXPECT_TRUE(fails([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "unsupported pre_tokenizer"));
  EXPECT_TRUE(fails([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }, "continuing_subword_prefix"));
  EXPECT_TRUE(fails([](json& j) { j["added_tokens"][4]["lstrip"] = "yes"; }, "t.json"));
  EXPECT_TRUE(fails_with([] { roberta_from_json("[1", "t.json"); }, "invalid JSON"));
}

TEST_F(RobertaBpe, RandomTextGivesIdsInRange) {
  const RobertaTokenizer tok = from_json();
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    const std::string text = testing::random_text(rng, 40, true) + (i % 3 == 0 ? " <mask>" : "");
    const EncoderInput in = tok.encode(text, text.substr(0, text.size() / 2), 64);
    ASSERT_LE(in.ids.size(), 64u);
    for (int32_t id : in.ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tok.vocab_size());
    }
  }
}

}  // namespace
}  // namespace fsvd
