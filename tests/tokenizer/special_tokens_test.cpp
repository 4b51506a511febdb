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

}  // namespace
}  // namespace fsvd
