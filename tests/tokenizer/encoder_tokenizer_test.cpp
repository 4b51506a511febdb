#include "tokenizer/encoder_tokenizer.h"

#include <gtest/gtest.h>

#include "testing/fails_with.h"

namespace fsvd {
namespace {

using Ids = std::vector<int32_t>;
using test::fails_with;

// One token a character (its byte value); cls 1, sep 2, framed as BERT or as RoBERTa.
class CharTokenizer : public EncoderTokenizer {
 public:
  explicit CharTokenizer(bool roberta)
      : frame_(roberta ? EncoderTemplate::roberta(1, 2) : EncoderTemplate::bert(1, 2)) {}
  explicit CharTokenizer(EncoderTemplate frame) : frame_(std::move(frame)) {}
  std::vector<int32_t> tokenize(std::string_view text) const override { return Ids(text.begin(), text.end()); }
  int32_t vocab_size() const override { return 256; }

 private:
  const EncoderTemplate& frame() const override { return frame_; }
  EncoderTemplate frame_;
};

TEST(EncoderTokenizer, FramesTextsAndPairs) {
  const CharTokenizer bert(false), roberta(true);
  EXPECT_EQ(bert.encode("ab", std::nullopt, 0).ids, (Ids{1, 'a', 'b', 2}));
  EXPECT_EQ(bert.encode("ab", std::nullopt, 0).type_ids, (Ids{0, 0, 0, 0}));
  const EncoderInput pair = bert.encode("a", "bc", 0);
  EXPECT_EQ(pair.ids, (Ids{1, 'a', 2, 'b', 'c', 2}));
  EXPECT_EQ(pair.type_ids, (Ids{0, 0, 0, 1, 1, 1}));
  const EncoderInput rpair = roberta.encode("a", "bc", 0);
  EXPECT_EQ(rpair.ids, (Ids{1, 'a', 2, 2, 'b', 'c', 2}));
  EXPECT_EQ(rpair.type_ids, (Ids{0, 0, 0, 0, 0, 0, 0}));
}

// tokenizers' longest_first: the shorter text keeps what it can up to half the budget.
TEST(EncoderTokenizer, TruncatesLongestFirst) {
  const CharTokenizer bert(false), roberta(true);
  EXPECT_EQ(bert.encode("abcdef", std::nullopt, 4).ids, (Ids{1, 'a', 'b', 2}));
  EXPECT_EQ(bert.encode("abcdef", "xy", 7).ids, (Ids{1, 'a', 'b', 2, 'x', 'y', 2}));  // the longer text cut
  EXPECT_EQ(bert.encode("abcdef", "uvwxyz", 8).ids, (Ids{1, 'a', 'b', 2, 'u', 'v', 'w', 2}));  // odd: the second
  EXPECT_EQ(roberta.encode("abcdef", "xy", 8).ids, (Ids{1, 'a', 'b', 2, 2, 'x', 'y', 2}));  // two seps between
  EXPECT_EQ(roberta.encode("ab", "xy", 8).ids.size(), 8u);  // fits: untouched
  EXPECT_TRUE(fails_with([&] { bert.encode("a", "b", 4); }, "no room"));
  EXPECT_TRUE(fails_with([&] { roberta.encode("a", "b", 5); }, "no room"));
  EXPECT_TRUE(fails_with([&] { roberta.encode("a", std::nullopt, 2); }, "no room"));
}

// A template's special tokens may be several ids, its pieces any order and token type;
// truncation leaves room for all its special tokens.
TEST(EncoderTokenizer, FramesByTemplate) {
  const CharTokenizer tok(EncoderTemplate{{{-1, {7, 8}, 2}, {0, {}, 1}, {-1, {2}, 0}},  // [7 8]:2 A:1 [2]:0
                                           {{1, {}, 1}, {-1, {9}, 0}, {0, {}, 0}}});         // B:1 [9]:0 A:0
  const EncoderInput single = tok.encode("ab", std::nullopt, 0);
  EXPECT_EQ(single.ids, (Ids{7, 8, 'a', 'b', 2}));
  EXPECT_EQ(single.type_ids, (Ids{2, 2, 1, 1, 0}));
  const EncoderInput pair = tok.encode("ab", "xyz", 4);
  EXPECT_EQ(pair.ids, (Ids{'x', 'y', 9, 'a'}));
  EXPECT_EQ(pair.type_ids, (Ids{1, 1, 0, 0}));
  EXPECT_EQ(tok.encode("abcdef", std::nullopt, 4).ids, (Ids{7, 8, 'a', 2}));
  EXPECT_TRUE(fails_with([&] { tok.encode("ab", std::nullopt, 3); }, "no room"));
}

}  // namespace
}  // namespace fsvd
