#include "tokenizer/bert_basic.h"

#include <gtest/gtest.h>

namespace fsvd {
namespace {

using Words = std::vector<std::string>;

TEST(BertBasic, SplitsWhitespaceAndPunctuation) {
  const BertBasicOptions o;
  EXPECT_EQ(bert_basic_split("Hello, World!  a$b", o), (Words{"hello", ",", "world", "!", "a", "$", "b"}));
  EXPECT_EQ(bert_basic_split("¿Qué?\t«x»", o), (Words{"¿", "que", "?", "«", "x", "»"}));
  EXPECT_EQ(bert_basic_split("", o), Words{});
}

TEST(BertBasic, CjkCharactersAreWordsOfTheirOwn) {
  EXPECT_EQ(bert_basic_split("我们ok今天", {}), (Words{"我", "们", "ok", "今", "天"}));
  BertBasicOptions o;
  o.handle_chinese_chars = false;
  EXPECT_EQ(bert_basic_split("我们ok", o), (Words{"我们ok"}));
  EXPECT_EQ(bert_basic_split("カタカナ", {}), (Words{"カタカナ"}));  // kana are not CJK ideographs
}

TEST(BertBasic, AccentsCaseAndControlCharacters) {
  BertBasicOptions cased;
  cased.lowercase = cased.strip_accents = false;
  EXPECT_EQ(bert_basic_split("Ångström", {}), (Words{"angstrom"}));
  EXPECT_EQ(bert_basic_split("Ångström", cased), (Words{"Ångström"}));
  BertBasicOptions lower_only;
  lower_only.strip_accents = false;
  EXPECT_EQ(bert_basic_split("ÉTÉ", lower_only), (Words{"été"}));
  // Per-character lower-casing: a final capital sigma becomes σ, not ς.
  EXPECT_EQ(bert_basic_split("ΣΑΣ", lower_only), (Words{"σασ"}));
  // NUL, U+FFFD, a format character and invalid UTF-8 vanish; control whitespace splits.
  const char messy[] = "a\0b\xEF\xBF\xBD" "c\u200bd\xFF" "e\nf";
  EXPECT_EQ(bert_basic_split(std::string(messy, sizeof messy - 1), {}), (Words{"abcde", "f"}));
  BertBasicOptions raw = cased;
  raw.clean_text = false;
  EXPECT_EQ(bert_basic_split("a\xFF", raw), (Words{"a\xEF\xBF\xBD"}));
}

}  // namespace
}  // namespace fsvd
