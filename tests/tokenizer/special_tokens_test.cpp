#include "tokenizer/special_tokens.h"

#include <gtest/gtest.h>

namespace fsvd {
namespace {

std::string show(const std::vector<SpecialTokenMatcher::Piece>& pieces) {
  std::string s;
  for (const auto& p : pieces) s += p.id >= 0 ? "[" + std::to_string(p.id) + "]" : "(" + std::string(p.text) + ")";
  return s;
}

TEST(SpecialTokenMatcher, LeftmostLongestAndOnlyWhenAsked) {
  SpecialTokenMatcher m;
  m.add("<|im_start|>", 1, false);
  m.add("<|im_start|>x", 7, false);  // longer token with the same prefix wins
  m.add("<x>", 5, true);             // user-defined: always matched
  m.add("", 9, true);                // ignored
  EXPECT_EQ(show(m.split("a<|im_start|>b<x>c", true)), "(a)[1](b)[5](c)");
  EXPECT_EQ(show(m.split("<|im_start|>xy", true)), "[7](y)");
  EXPECT_EQ(show(m.split("a<|im_start|>b<x>c", false)), "(a<|im_start|>b)[5](c)");
  EXPECT_EQ(show(m.split("<|im_start|<x><x>", true)), "(<|im_start|)[5][5]");
  EXPECT_EQ(show(m.split("", true)), "");
}

// Hugging Face AddedToken lstrip / rstrip: the token takes in the Unicode
// whitespace beside it, never text an earlier token already took.
TEST(SpecialTokenMatcher, StripTakesInWhitespace) {
  SpecialTokenMatcher m;
  m.add("<mask>", 4, false, {true, false});
  m.add("<r>", 6, true, {false, true});
  EXPECT_EQ(show(m.split("a  <mask>.", true)), "(a)[4](.)");
  EXPECT_EQ(show(m.split("a\u00a0\u3000\t<mask>", true)), "(a)[4]");  // nbsp, ideographic space, tab
  EXPECT_EQ(show(m.split("   <mask>", true)), "[4]");
  EXPECT_EQ(show(m.split("a<r>  <mask> b", true)), "(a)[6][4]( b)");  // <r> took the spaces first
  EXPECT_EQ(show(m.split("x \xA0<mask>", true)), "(x \xA0)[4]");  // a stray byte is not whitespace
  EXPECT_EQ(show(m.split("a <mask>", false)), "(a <mask>)");
}

// single_word: only where no word character (regex \w: letters, marks, digits,
// connector punctuation, joiners) touches the token; a refused match still hides
// the text it covered from other tokens, as in tokenizers.
TEST(SpecialTokenMatcher, SingleWord) {
  SpecialTokenMatcher m;
  AddedTokenFlags single;
  single.single_word = true;
  m.add("ab", 1, true, single);
  m.add("abc", 2, true, single);
  m.add("bc", 3, true);
  EXPECT_EQ(show(m.split("ab", true)), "[1]");
  EXPECT_EQ(show(m.split("(ab) ab.ab-", true)), "(()[1]() )[1](.)[1](-)");
  EXPECT_EQ(show(m.split("xab ab1 _ab", true)), "(xab ab1 _ab)");
  EXPECT_EQ(show(m.split("\u00e9ab ab\u0301 ab\u200d", true)), "(\u00e9ab ab\u0301 ab\u200d)");
  EXPECT_EQ(show(m.split("xabc bc", true)), "(xabc )[3]");  // "abc" refused, and "bc" inside it not tried
  EXPECT_EQ(show(m.split("\xFF" "ab", true)), "(\xFF)[1]");  // a stray byte is no word character
}

// Tokens not `normalized` are matched first; the others in the text left between them,
// where the pieces' ends count as the text's ends for single_word.
TEST(SpecialTokenMatcher, NormalizedTokensInASecondPass) {
  SpecialTokenMatcher m;
  AddedTokenFlags second;
  second.normalized = second.single_word = true;
  m.add("END", 1, true);
  m.add("ok", 2, true, second);
  m.add("okEND!", 3, true, second);  // longer, but the first pass took END
  EXPECT_EQ(show(m.split("ENDok", true)), "[1][2]");
  EXPECT_EQ(show(m.split("okEND!", true)), "[2][1](!)");
  EXPECT_EQ(show(m.split("xok", true)), "(xok)");
}

// The search goes on after a token, not after the whitespace it takes in: the next
// token may begin there (both kept), or be left empty by lstrip (then dropped).
TEST(SpecialTokenMatcher, OverlapsWithTakenWhitespace) {
  SpecialTokenMatcher m;
  m.add("<r>", 1, true, {false, true});
  m.add(" x", 2, true);
  m.add(" ", 3, true, {true, true});
  EXPECT_EQ(show(m.split("<r> x", true)), "[1][2]");
  EXPECT_EQ(show(m.split("<r>  y", true)), "[1](y)");  // both spaces' tokens left empty
  EXPECT_EQ(show(m.split("a  b", true)), "(a)[3](b)");
}

}  // namespace
}  // namespace fsvd
