#include "tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;

std::string tiny_json() { return testing::read_file(testing::fixture("tokenizer/tiny_tokenizer.json")); }

// Expected ids checked against Hugging Face tokenizers on the same file.
TEST(BpeTokenizer, TinyTokenizerJson) {
  const auto tok = tokenizer_from_json(tiny_json(), "", "tiny_tokenizer.json");
  EXPECT_EQ(tok->vocab_size(), 27);
  EXPECT_EQ(tok->encode("hello world", false), (Ids{18, 23}));
  EXPECT_EQ(tok->encode("hello\n123", false), (Ids{18, 14, 11, 12, 13}));  // digits split: no "12" merge
  EXPECT_EQ(tok->encode("held", false), (Ids{15, 22}));
  EXPECT_EQ(tok->encode("lllll", false), (Ids{16, 16, 5}));  // equal ranks merge leftmost first
  EXPECT_EQ(tok->encode("hello  world", false), (Ids{18, 7, 23}));
  EXPECT_EQ(tok->encode("z", false), (Ids{25}));                       // unknown byte → <unk>
  EXPECT_EQ(tok->encode("hello<x>world", false), (Ids{18, 26, 8, 20, 22}));  // user-defined: always
  EXPECT_EQ(tok->encode("<|im_start|>hello<|im_end|>", false, true), (Ids{1, 18, 2}));
  EXPECT_EQ(tok->decode({1, 18, 23, 14, 11, 2}), "<|im_start|>hello world\n1<|im_end|>");
  // No tokenizer_config.json: no BOS, EOS falls back to <|endoftext|>.
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_FALSE(tok->adds_bos());
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_EQ(tok->stop_ids(), (Ids{0, 2}));
  EXPECT_THROW(tok->decode({27}), Error);
}

TEST(BpeTokenizer, TokenizerConfigAndPairMerges) {
  json j = json::parse(tiny_json());
  json pairs = json::array();
  for (const auto& m : j["model"]["merges"]) {
    const std::string s = m;
    pairs.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  j["model"]["merges"] = pairs;
  const std::string config =
      R"({"bos_token": {"content": "<|im_start|>"}, "eos_token": "<|im_end|>", "add_bos_token": true,
          "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})";
  const auto tok = tokenizer_from_json(j.dump(), config, "pairs.json");
  EXPECT_EQ(tok->encode("hello world", true), (Ids{1, 18, 23}));
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->adds_bos());
  EXPECT_EQ(tok->stop_ids(), (Ids{2, 0}));
  EXPECT_EQ(tok->chat_template(), "D");
}

TEST(BpeTokenizer, RejectsMalformedTokenizerJson) {
  const json good = json::parse(tiny_json());
  auto broken = [&](auto edit) {
    json j = good;
    edit(j);
    return j.dump();
  };
  const std::vector<std::string> bad = {
      "", "{", "[1,2]", R"({"model": 5})",
      broken([](json& j) { j["model"]["type"] = "WordPiece"; }),
      broken([](json& j) { j["normalizer"] = {{"type", "NFC"}}; }),
      broken([](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}}; }),
      broken([](json& j) { j["pre_tokenizer"] = nullptr; }),  // not byte-level
      broken([](json& j) { j["model"]["vocab"]["h"] = 1000; }),
      broken([](json& j) { j["model"]["vocab"]["h"] = -1; }),
      broken([](json& j) { j["model"]["vocab"]["h"] = "three"; }),
      broken([](json& j) { j["model"]["vocab"]["h"] = 4; }),  // id given twice
      broken([](json& j) { j["model"]["merges"].push_back("q z"); }),
      broken([](json& j) { j["model"]["merges"].push_back("h"); }),
      broken([](json& j) { j["model"]["merges"].push_back(json::array({"h"})); }),
      broken([](json& j) { j["model"]["merges"] = "h e"; }),
      broken([](json& j) { j["added_tokens"][0]["id"] = 3; }),  // clashes with "h"
      broken([](json& j) { j["added_tokens"][0]["content"] = 7; }),
      broken([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = "yes"; }),
      broken([&](json& j) {
        json split = {{"type", "Split"}, {"pattern", {{"Regex", "(("}}}};
        j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({split, good["pre_tokenizer"]})}};
      }),
  };
  for (const auto& text : bad) EXPECT_THROW(tokenizer_from_json(text, "", "bad.json"), Error) << text.substr(0, 200);
  EXPECT_THROW(tokenizer_from_json(good.dump(), "{", "bad.json"), Error);
}

class SmolLm2 : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::smollm2_gguf();
    if (path_.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (set FLASHSVD_SMOLLM2_GGUF)";
    gguf_ = std::make_unique<GgufFile>(path_);
    tok_ = tokenizer_from_gguf(*gguf_);
  }
  std::string path_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<Tokenizer> tok_;
};

// Hugging Face tokenizers' ids (make_smollm2_fixture.py) for text, chat markup, code and numbers.
TEST_F(SmolLm2, MatchesHuggingFaceReference) {
  EXPECT_EQ(tok_->vocab_size(), 49152);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_FALSE(tok_->adds_bos());
  EXPECT_EQ(tok_->stop_ids(), (Ids{2, 0}));
  const auto fx = testing::read_json(testing::fixture("tokenizer/smollm2_bpe.json"));
  ASSERT_GE(fx["cases"].size(), 25u);
  for (const auto& c : fx["cases"]) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<Ids>();
    EXPECT_EQ(tok_->encode(text, false, false), ids) << text;
    EXPECT_EQ(tok_->encode(text, false, true), c["ids_parse_special"].get<Ids>()) << text;
    EXPECT_EQ(tok_->decode(ids), text);
  }
}

// Exact for every byte the vocabulary has a token for. SmolLM2 lacks 21 byte
// tokens (a few control characters, 0xC0, 0xC1, 0xF1, 0xF2, 0xF5..0xFF: counted
// from the GGUF with Python); those bytes become <unk>.
TEST_F(SmolLm2, RoundTripsArbitraryBytes) {
  std::vector<bool> has_token(256);
  for (int b = 0; b < 256; ++b) {
    const Ids ids = tok_->encode(std::string(1, static_cast<char>(b)), false);
    ASSERT_EQ(ids.size(), 1u);
    has_token[b] = ids[0] != 0;
  }
  EXPECT_FALSE(has_token[0xC0]);
  EXPECT_FALSE(has_token[0xFF]);
  EXPECT_EQ(std::count(has_token.begin(), has_token.end(), true), 256 - 21);

  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int trial = 0; trial < 100; ++trial) {
    std::string text = testing::random_text(rng, 1 + trial % 30, /*invalid=*/true);
    if (trial % 4 == 0) {  // pure random bytes
      text.assign(static_cast<size_t>(trial + 1), '\0');
      for (char& ch : text) ch = static_cast<char>(byte(rng));
    }
    for (char& ch : text)
      if (!has_token[static_cast<uint8_t>(ch)]) ch = 'x';
    EXPECT_EQ(tok_->decode(tok_->encode(text, false)), text);
  }
}

// The heap-based merge loop against the textbook one: repeatedly merge the
// lowest-ranked adjacent pair, leftmost first, inside each pre-tokenized word.
TEST_F(SmolLm2, MergesMatchNaiveBpe) {
  std::map<std::pair<std::string, std::string>, size_t> rank;
  const auto& merges = gguf_->get("tokenizer.ggml.merges").as_array("merges");
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string m = merges[i].as_string("merge");
    rank.emplace(std::pair{m.substr(0, m.find(' ', 1)), m.substr(m.find(' ', 1) + 1)}, i);
  }
  std::map<std::string, int32_t> id;
  const auto& tokens = gguf_->get("tokenizer.ggml.tokens").as_array("tokens");
  for (size_t i = 0; i < tokens.size(); ++i) id.emplace(tokens[i].as_string("token"), static_cast<int32_t>(i));
  const Pretokenizer pre(pretokenize_steps_for("smollm", "test"), "test");

  std::mt19937 rng(77);
  for (int trial = 0; trial < 40; ++trial) {
    const std::string text = testing::random_text(rng, 10 + trial);
    Ids expected;
    for (const std::string& word : pre.split(text)) {
      std::vector<std::string> sym;
      for (const char c : word) sym.push_back(byte_to_unicode(static_cast<uint8_t>(c)));
      for (;;) {
        size_t best = SIZE_MAX, at = 0;
        for (size_t i = 0; i + 1 < sym.size(); ++i) {
          const auto it = rank.find({sym[i], sym[i + 1]});
          if (it != rank.end() && it->second < best) {
            best = it->second;
            at = i;
          }
        }
        if (best == SIZE_MAX) break;
        sym[at] += sym[at + 1];
        sym.erase(sym.begin() + static_cast<long>(at) + 1);
      }
      for (const auto& s : sym) expected.push_back(id.at(s));
    }
    ASSERT_EQ(tok_->encode(text, false), expected) << text;
  }
}

TEST_F(SmolLm2, ChatPromptEncodesWithControlTokens) {
  const std::string prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
  const Ids ids = tok_->encode(prompt, tok_->adds_bos(), true);
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
  EXPECT_EQ(tok_->decode(ids), prompt);
  EXPECT_NE(tok_->chat_template().find("<|im_start|>"), std::string::npos);
}

}  // namespace
}  // namespace fsvd
