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

}  // namespace
}  // namespace fsvd
