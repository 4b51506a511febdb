#include "tokenizer/llama2c_tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "core/error.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

// A tokenizer.bin image built in memory.
std::vector<uint8_t> make_bin(int32_t max_len, const std::vector<std::pair<float, std::string>>& tokens) {
  std::vector<uint8_t> out(4);
  std::memcpy(out.data(), &max_len, 4);
  for (const auto& [score, piece] : tokens) {
    const auto len = static_cast<int32_t>(piece.size());
    const size_t at = out.size();
    out.resize(at + 8 + piece.size());
    std::memcpy(out.data() + at, &score, 4);
    std::memcpy(out.data() + at + 4, &len, 4);
    std::memcpy(out.data() + at + 8, piece.data(), piece.size());
  }
  return out;
}

std::unique_ptr<ScoredTokenizer> parse(const std::vector<uint8_t>& b) {
  return parse_llama2c_tokenizer(b.data(), b.size(), "mem.bin");
}

// run.c's encode, transcribed literally (O(n^2) scan for the best pair each
// round) over an independent read of the file: the reference for the heap version.
class NaiveRunC {
 public:
  explicit NaiveRunC(const std::string& path) {
    const std::string b = testing::read_file(path);
    size_t pos = 4;
    while (pos < b.size()) {
      float score;
      int32_t len;
      std::memcpy(&score, b.data() + pos, 4);
      std::memcpy(&len, b.data() + pos + 4, 4);
      vocab_.push_back(b.substr(pos + 8, static_cast<size_t>(len)));
      scores_.push_back(score);
      pos += 8 + static_cast<size_t>(len);
    }
    for (size_t i = vocab_.size(); i-- > 0;) lookup_[vocab_[i]] = static_cast<int>(i);  // lowest id wins
  }
  std::vector<int32_t> encode(const std::string& text) const {
    std::vector<int32_t> t = {1};
    if (!text.empty()) t.push_back(lookup_.at(" "));
    for (size_t i = 0; i < text.size();) {
      size_t len = 1;
      while (len < 4 && i + len < text.size() && (static_cast<uint8_t>(text[i + len]) & 0xC0) == 0x80) ++len;
      const auto it = lookup_.find(text.substr(i, len));
      if (it != lookup_.end()) {
        t.push_back(it->second);
      } else {
        for (size_t k = i; k < i + len; ++k) t.push_back(static_cast<uint8_t>(text[k]) + 3);
      }
      i += len;
    }
    for (;;) {
      float best = -1e10f;
      int best_id = -1;
      size_t best_idx = 0;
      for (size_t i = 0; i + 1 < t.size(); ++i) {
        const auto it = lookup_.find(vocab_[t[i]] + vocab_[t[i + 1]]);
        if (it != lookup_.end() && scores_[it->second] > best) {
          best = scores_[it->second];
          best_id = it->second;
          best_idx = i;
        }
      }
      if (best_id < 0) break;
      t[best_idx] = best_id;
      t.erase(t.begin() + static_cast<long>(best_idx) + 1);
    }
    return t;
  }

 private:
  std::vector<std::string> vocab_;
  std::vector<float> scores_;
  std::map<std::string, int> lookup_;
};

TEST(Llama2cTokenizer, ParsesAndEncodesATinyVocabulary) {
  std::vector<std::pair<float, std::string>> toks = {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    toks.push_back({0, hex});
  }
  const int32_t sp = 259, a = 260, b = 261, ab = 262, sp_ab = 263;
  toks.push_back({-1, " "});
  toks.push_back({-2, "a"});
  toks.push_back({-3, "b"});
  toks.push_back({-4, "ab"});
  toks.push_back({-5, " ab"});
  const auto tok = parse(make_bin(6, toks));
  EXPECT_EQ(tok->vocab_size(), 264);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->encode("ab", true), (std::vector<int32_t>{1, sp_ab}));
  EXPECT_EQ(tok->encode("ba", false), (std::vector<int32_t>{sp, b, a}));
  EXPECT_EQ(tok->encode("aab", false), (std::vector<int32_t>{sp, a, ab}));
  EXPECT_EQ(tok->encode("", true), (std::vector<int32_t>{1}));  // no dummy prefix for empty text
  // 'z' and 'é' are not pieces: raw bytes, id = byte + 3.
  EXPECT_EQ(tok->encode("zé", false), (std::vector<int32_t>{sp, 'z' + 3, 0xC3 + 3, 0xA9 + 3}));
  EXPECT_EQ(tok->decode({1, sp_ab, sp, 'z' + 3, 0xC3 + 3, 0xA9 + 3, 2}), "ab zé");
  EXPECT_EQ(tok->decode({sp_ab}), " ab");  // the space is dropped only right after BOS
  // run.c groups the dummy space with a leading continuation byte: both become raw bytes.
  EXPECT_EQ(tok->encode("\xA9", false), (std::vector<int32_t>{' ' + 3, 0xA9 + 3}));
  EXPECT_EQ(tok->decode(tok->encode("\xA9", true)), " \xA9");
  // The literal text of control or byte pieces stays text (SentencePiece, unlike run.c's lookup).
  EXPECT_EQ(tok->encode("<0x41>", false).size(), 7u);
  EXPECT_EQ(tok->encode("<s>", false, /*parse_special=*/true), (std::vector<int32_t>{1}));
  EXPECT_THROW(tok->decode({264}), Error);
  EXPECT_THROW(tok->decode({-1}), Error);
}

TEST(Llama2cTokenizer, RejectsMalformedFiles) {
  const std::vector<std::pair<float, std::string>> three = {{0, "<unk>"}, {0, "<s>"}, {0, "</s>"}};
  EXPECT_NO_THROW(parse(make_bin(5, three)));
  EXPECT_THROW(parse({1, 0}), Error);                          // no header
  EXPECT_THROW(parse(make_bin(0, three)), Error);              // max_token_length 0
  EXPECT_THROW(parse(make_bin(4, three)), Error);              // "<unk>" longer than max_token_length
  EXPECT_THROW(parse(make_bin(5, {{0, "<unk>"}, {0, "<s>"}})), Error);  // no EOS
  auto truncated = make_bin(5, three);
  truncated.pop_back();
  EXPECT_THROW(parse(truncated), Error);
  auto torn_header = make_bin(5, three);
  torn_header.resize(torn_header.size() + 6);  // half of another token's score/length
  EXPECT_THROW(parse(torn_header), Error);
  auto negative = make_bin(5, three);
  const int32_t minus_one = -1;
  std::memcpy(negative.data() + 8, &minus_one, 4);  // length of token 0
  EXPECT_THROW(parse(negative), Error);
  auto nan_score = make_bin(5, three);
  const float nan = std::nanf("");
  std::memcpy(nan_score.data() + 4, &nan, 4);
  EXPECT_THROW(parse(nan_score), Error);
  EXPECT_THROW(load_llama2c_tokenizer("/nonexistent/tokenizer.bin"), Error);
}

TEST(Llama2cTokenizer, Stories260KRoundTripsItsGreedyOutput) {
  const std::string path = testing::shared_data("models/stories260K/tok512.bin");
  const std::string text_path = testing::shared_data("models/stories260K/greedy_bos_256.txt");
  if (!std::filesystem::exists(path) || !std::filesystem::exists(text_path)) GTEST_SKIP() << "no " << path;
  const auto tok = load_llama2c_tokenizer(path);
  EXPECT_EQ(tok->vocab_size(), 512);
  const std::string text = testing::read_file(text_path);
  const auto ids = tok->encode(text, true);
  EXPECT_EQ(ids.front(), 1);
  // The text is 256 model steps; the encoder may pick a slightly different segmentation.
  EXPECT_GT(ids.size(), 230u);
  EXPECT_LT(ids.size(), 280u);
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_EQ(ids, NaiveRunC(path).encode(text));
}

TEST(Llama2cTokenizer, MatchesRunCOnRandomText) {
  std::mt19937 rng(2024);
  for (const char* rel : {"models/stories260K/tok512.bin", "tokenizers/llama2/tokenizer.bin"}) {
    const std::string path = testing::shared_data(rel);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
    const auto tok = load_llama2c_tokenizer(path);
    const NaiveRunC naive(path);
    for (int trial = 0; trial < 60; ++trial) {
      const std::string text = testing::random_text(rng, 3 + trial % 25, /*invalid=*/trial % 3 == 0);
      const auto ids = tok->encode(text, true);
      ASSERT_EQ(ids, naive.encode(text)) << rel << " on '" << text << "'";
      EXPECT_EQ(tok->decode(ids), text) << rel;
    }
  }
}

// Python sentencepiece's ids for the multilingual sample (make_llama2_fixture.py):
// run.c's algorithm over tokenizer.bin reproduces them exactly.
TEST(Llama2cTokenizer, Llama2MatchesSentencePieceReference) {
  const std::string path = testing::shared_data("tokenizers/llama2/tokenizer.bin");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const auto tok = load_llama2c_tokenizer(path);
  EXPECT_EQ(tok->vocab_size(), 32000);
  const auto fx = testing::read_json(testing::fixture("tokenizer/llama2_sentencepiece.json"));
  ASSERT_GE(fx["cases"].size(), 15u);
  for (const auto& c : fx["cases"]) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(text, false), ids) << text;
    std::vector<int32_t> with_bos = {1};
    with_bos.insert(with_bos.end(), ids.begin(), ids.end());
    EXPECT_EQ(tok->decode(with_bos), text);
  }
}

}  // namespace
}  // namespace fsvd
