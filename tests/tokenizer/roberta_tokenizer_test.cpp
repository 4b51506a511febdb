#include "tokenizer/roberta_tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "families/family_test_util.h"
#include "testing/fails_with.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;
using test::fails_with;

// The fixtures' ids come from Hugging Face tokenizers and transformers
// (tests/tokenizer/make_roberta_fixture.py, make_roberta_cases.py).
class RobertaBpe : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = testing::read_json(testing::fixture("tokenizer/roberta_bpe.json"));
    cases_ = testing::read_json(testing::fixture("tokenizer/roberta_bpe_cases.json"));
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
  json with_post_processor(const json& post) const {
    json j = tokenizer_;
    j["post_processor"] = post;
    return j;
  }
  void expect_matches(const RobertaTokenizer& tok, const char* ids_key) const {
    ASSERT_GE(fixture_["cases"].size(), 30u);
    for (const json& c : fixture_["cases"]) {
      const std::string text = c["text"];
      EXPECT_EQ(tok.tokenize(text), c[ids_key].get<Ids>()) << text;
    }
    testing::expect_framed(tok, fixture_["pairs"], ids_key);
  }
  json fixture_, cases_, tokenizer_;
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
  EXPECT_TRUE(fails([](json& j) { j["post_processor"] = {{"type", "ByteLevel"}}; },
                    "post_processor 'ByteLevel' is not supported for encoders"));
  EXPECT_TRUE(fails([](json& j) { j["post_processor"]["cls"] = {"<s>", 600}; }, "special token id 600 is outside"));
  EXPECT_TRUE(fails([](json& j) { j["post_processor"]["sep"] = "</s>"; }, "'sep' is not a [token, id] pair"));
  EXPECT_TRUE(fails([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "unsupported pre_tokenizer"));
  EXPECT_TRUE(fails([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }, "continuing_subword_prefix"));
  EXPECT_TRUE(fails([](json& j) { j["added_tokens"][4]["lstrip"] = "yes"; }, "t.json"));
  EXPECT_TRUE(fails_with([] { roberta_from_json("[1", "t.json"); }, "invalid JSON"));
}

// Added tokens' single_word, lstrip, rstrip and normalized, in the encoder and in the
// decoders' tokenizer (the same tokenizer.json reader and matcher).
TEST_F(RobertaBpe, AddedTokenFlagsMatchHuggingFace) {
  ASSERT_GE(cases_["added"].size(), 2u);
  for (const json& group : cases_["added"]) {
    json j = tokenizer_;
    for (const json& t : group["added_tokens"]) j["added_tokens"].push_back(t);
    const RobertaTokenizer encoder = roberta_from_json(j.dump(), path_);
    const std::unique_ptr<Tokenizer> decoder = tokenizer_from_json(j.dump(), "", path_);
    ASSERT_GE(group["cases"].size(), 10u);
    for (const json& c : group["cases"]) {
      const std::string text = c["text"];
      EXPECT_EQ(encoder.tokenize(text), c["ids"].get<Ids>()) << group["name"] << ": '" << text << "'";
      EXPECT_EQ(decoder->encode(text, false, true), c["ids"].get<Ids>()) << group["name"] << ": '" << text << "'";
    }
  }
}

// vocab.json + merges.txt directories with extra added tokens (tokenizer_config.json's
// added_tokens_decoder, special_tokens_map.json, added_tokens.json) as transformers'
// AutoTokenizer loads them.
TEST_F(RobertaBpe, VocabDirectoriesMatchTransformers) {
  ASSERT_GE(cases_["directories"].size(), 6u);
  for (const json& d : cases_["directories"]) {
    test::TempDir dir("roberta_directory");
    write_vocab_merges(dir);
    std::string merges = testing::merges_txt(tokenizer_);
    if (d["merges"] == "without_header") merges.erase(0, merges.find('\n') + 1);
    if (d["merges"] == "without_final_newline") merges.pop_back();
    dir.write("merges.txt", merges);
    for (const auto& [name, text] : d["files"].items()) dir.write(name, text.get<std::string>());
    const RobertaTokenizer tok = load_roberta_vocab_merges(dir.path());
    for (const json& c : d["cases"]) {
      const std::string text = c["text"];
      EXPECT_EQ(tok.tokenize(text), c["ids"].get<Ids>()) << d["name"] << ": '" << text << "'";
    }
    testing::expect_framed(tok, d["pairs"], d["name"]);
  }
}

// Directories transformers itself gets wrong or refuses.
TEST_F(RobertaBpe, VocabDirectoryRefusals) {
  test::TempDir dir("roberta_refusals");
  auto fails = [&](const json& config, const std::string& message) {
    write_vocab_merges(dir, config);
    return fails_with([&] { load_roberta_vocab_merges(dir.path()); }, message);
  };
  // The slow tokenizer frames with the declared index 605, the fast one numbers the token 600.
  const json gap = {{"content", "<sep2>"}, {"special", true}};
  EXPECT_TRUE(fails({{"sep_token", "<sep2>"}, {"added_tokens_decoder", {{"605", gap}}}},
                    "transformers would frame with id 605 for '<sep2>'"));
  EXPECT_TRUE(fails({{"cls_token", {{"content", "<s>"}}}}, "'cls_token' is neither"));  // a dict without __type
  EXPECT_TRUE(fails({{"added_tokens_decoder", {{"x1", gap}}}}, "index 'x1' is not a number"));
  EXPECT_TRUE(fails({{"added_tokens_decoder", {{"600", {{"lstrip", true}}}}}}, "'600' is neither"));
  EXPECT_TRUE(fails({{"additional_special_tokens", "<x>"}}, "'additional_special_tokens' is not a list"));
  dir.write("tokenizer_config.json", "{}");
  dir.write("added_tokens.json", R"({"<x>": "600"})");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "'<x>' has no index"));
  dir.write("added_tokens.json", "{");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "added_tokens.json: invalid JSON"));
  dir.write("added_tokens.json", "{}");
  dir.write("merges.txt", "#version: 0.2\nĠ t x\n");
  EXPECT_TRUE(fails_with([&] { load_roberta_vocab_merges(dir.path()); }, "line 2 'Ġ t x' is not two tokens"));
}

// TemplateProcessing (and BertProcessing) framings, as tokenizers applies them.
TEST_F(RobertaBpe, TemplatesMatchHuggingFace) {
  ASSERT_GE(cases_["templates"].size(), 3u);
  for (const json& t : cases_["templates"])
    testing::expect_framed(roberta_from_json(with_post_processor(t["post_processor"]).dump(), path_), t["pairs"],
                           t["name"]);
}

// Templates that cannot frame an encoder's texts (tokenizers would repeat, drop or panic).
TEST_F(RobertaBpe, TemplateRefusals) {
  const json specials = {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}}};
  auto seq = [](const char* id, int type = 0) { return json{{"Sequence", {{"id", id}, {"type_id", type}}}}; };
  auto tok = [](const char* id, int type = 0) { return json{{"SpecialToken", {{"id", id}, {"type_id", type}}}}; };
  auto load = [&](const json& single, const json& pair) {
    const json post = {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
    return roberta_from_json(with_post_processor(post).dump(), "t.json");
  };
  auto fails = [&](const json& single, const json& pair, const std::string& message) {
    return fails_with([&] { load(single, pair); }, message);
  };
  const json pair = {tok("<s>"), seq("A"), seq("B", 1)};
  EXPECT_EQ(load({tok("<s>"), seq("A")}, pair).encode("x", "x", 0).type_ids, (Ids{0, 0, 1}));
  EXPECT_TRUE(fails({tok("<s>"), seq("B")}, pair, "'single' template must use $A once and not $B"));
  EXPECT_TRUE(fails({seq("A"), seq("A")}, pair, "it uses $A 2 and $B 0 times"));
  EXPECT_TRUE(fails(json::array({seq("A")}), {seq("A"), tok("<s>")}, "'pair' template must use $A and $B once each"));
  EXPECT_TRUE(fails({tok("</s>"), seq("A")}, pair, "special token '</s>' is not in its special_tokens"));
  EXPECT_TRUE(fails(json::array({seq("C")}), pair, "sequence 'C' is neither A nor B"));
  EXPECT_TRUE(fails({tok("<s>", -1), seq("A")}, pair, "type_id -1 is out of range"));
  EXPECT_TRUE(fails(json::array({json{{"Piece", {{"id", "A"}, {"type_id", 0}}}}}), pair,
                    "is neither a Sequence nor a SpecialToken"));
  EXPECT_TRUE(fails("$A", pair, "'single' is not a list of pieces"));
  const json byte_level = {{"type", "ByteLevel"}};
  const json roberta = {{"type", "RobertaProcessing"}, {"cls", {"<s>", 0}}, {"sep", {"</s>", 2}}};
  auto sequence_fails = [&](const json& steps, const std::string& message) {
    const json post = {{"type", "Sequence"}, {"processors", steps}};
    return fails_with([&] { roberta_from_json(with_post_processor(post).dump(), "t.json"); }, message);
  };
  EXPECT_TRUE(sequence_fails(json::array({byte_level}), "no step adds the special tokens"));
  EXPECT_TRUE(sequence_fails({roberta, byte_level, roberta}, "more than one step adds special tokens"));
  EXPECT_TRUE(sequence_fails(json::array({{{"type", "Sequence"}, {"processors", json::array({roberta})}}}),
                             "a nested Sequence"));
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
