#include "tokenizer/bert_basic.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include "core/error.h"

namespace fsvd {

namespace {

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  int32_t i = 0;
  const int32_t n = static_cast<int32_t>(s.size());
  while (i < n) {
    UChar32 c;
    U8_NEXT(reinterpret_cast<const uint8_t*>(s.data()), i, n, c);
    out.push_back(c < 0 ? 0xFFFD : static_cast<char32_t>(c));
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  uint8_t buf[U8_MAX_LENGTH];
  int32_t len = 0;
  U8_APPEND_UNSAFE(buf, len, static_cast<UChar32>(c));  // c is a valid code point: decode_utf8 made it
  out.append(reinterpret_cast<const char*>(buf), len);
}

bool is_whitespace(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(c); }

// Categories Cc, Cf, Cn, Co (tokenizers' is_other), tab and newlines excepted.
bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const int8_t t = u_charType(c);
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_UNASSIGNED || t == U_PRIVATE_USE_CHAR;
}

// The CJK Unified Ideographs blocks of BERT's original code.
bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return u_ispunct(c);
}

std::u32string strip_accents(const std::u32string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  check(U_SUCCESS(status), "BERT tokenizer", "ICU NFD normalizer unavailable: ", u_errorName(status));
  const icu::UnicodeString s = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(text.data()),
                                                              static_cast<int32_t>(text.size()));
  const icu::UnicodeString d = nfd->normalize(s, status);
  check(U_SUCCESS(status), "BERT tokenizer", "NFD failed: ", u_errorName(status));
  std::u32string out;
  for (int32_t i = 0; i < d.length();) {
    const UChar32 c = d.char32At(i);
    i += U16_LENGTH(c);
    if (u_charType(c) != U_NON_SPACING_MARK) out.push_back(static_cast<char32_t>(c));
  }
  return out;
}

// Per character, as tokenizers does: no context-dependent rules (final sigma).
void append_lower(std::u32string& out, char32_t c) {
  UChar in[2], lower[8];
  int32_t len = 0;
  U16_APPEND_UNSAFE(in, len, static_cast<UChar32>(c));
  UErrorCode status = U_ZERO_ERROR;
  const int32_t n = u_strToLower(lower, 8, in, len, "", &status);
  check(U_SUCCESS(status), "BERT tokenizer", "lower-casing failed: ", u_errorName(status));
  for (int32_t i = 0; i < n;) {
    UChar32 l;
    U16_NEXT(lower, i, n, l);
    out.push_back(static_cast<char32_t>(l));
  }
}

}  // namespace

std::vector<std::string> bert_basic_split(std::string_view text, const BertBasicOptions& options) {
  std::u32string chars;
  for (char32_t c : decode_utf8(text)) {
    if (options.clean_text) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      if (is_whitespace(c)) c = ' ';
    }
    if (options.handle_chinese_chars && is_chinese(c)) {
      chars += U' ';
      chars += c;
      chars += U' ';
    } else {
      chars += c;
    }
  }
  if (options.strip_accents) chars = strip_accents(chars);
  if (options.lowercase) {
    std::u32string lower;
    for (char32_t c : chars) append_lower(lower, c);
    chars.swap(lower);
  }
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t c : chars) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      append_utf8(word, c);
      flush();
    } else {
      append_utf8(word, c);
    }
  }
  flush();
  return words;
}

}  // namespace fsvd
