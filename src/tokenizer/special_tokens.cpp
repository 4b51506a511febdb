#include "tokenizer/special_tokens.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>

namespace fsvd {
namespace {

// Start of the run of whitespace characters that ends at `end` in text[begin, end).
size_t whitespace_before(std::string_view text, size_t begin, size_t end) {
  while (end > begin) {
    int32_t i = static_cast<int32_t>(end);
    UChar32 c;
    U8_PREV(text.data(), static_cast<int32_t>(begin), i, c);
    if (c < 0 || !u_isUWhiteSpace(c)) break;
    end = static_cast<size_t>(i);
  }
  return end;
}

// End of the run of whitespace characters that starts at `begin`.
size_t whitespace_after(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    int32_t i = static_cast<int32_t>(begin);
    UChar32 c;
    U8_NEXT(text.data(), i, static_cast<int32_t>(text.size()), c);
    if (c < 0 || !u_isUWhiteSpace(c)) break;
    begin = static_cast<size_t>(i);
  }
  return begin;
}

// Rust regex's Unicode \w, which `tokenizers` uses for single_word: alphabetic, marks,
// decimal digits, connector punctuation and the joiners. A stray byte is no word character.
bool is_word_char(UChar32 c) {
  return c >= 0 && (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL) ||
                    (U_GET_GC_MASK(c) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0);
}

// Whether a word character ends text[0, end) or starts text[begin, ...).
bool word_before(std::string_view text, size_t end) {
  if (end == 0) return false;
  int32_t i = static_cast<int32_t>(end);
  UChar32 c;
  U8_PREV(text.data(), 0, i, c);
  return is_word_char(c);
}
bool word_after(std::string_view text, size_t begin) {
  if (begin >= text.size()) return false;
  int32_t i = static_cast<int32_t>(begin);
  UChar32 c;
  U8_NEXT(text.data(), i, static_cast<int32_t>(text.size()), c);
  return is_word_char(c);
}

}  // namespace

void SpecialTokenMatcher::add(std::string text, int32_t id, bool always, AddedTokenFlags flags) {
  if (text.empty()) return;  // an empty token would match everywhere
  auto& list = by_first_byte_[flags.normalized][static_cast<unsigned char>(text[0])];
  list.push_back({std::move(text), id, always, flags});
  std::stable_sort(list.begin(), list.end(),
                   [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
}

std::vector<SpecialTokenMatcher::Piece> SpecialTokenMatcher::split(std::string_view text,
                                                                   bool parse_special) const {
  std::vector<Piece> first, pieces;
  split_pass(text, false, parse_special, first);
  if (by_first_byte_[1].empty()) return first;  // no second pass to make (most tokenizers)
  for (const Piece& p : first) {
    if (p.id >= 0)
      pieces.push_back(p);
    else
      split_pass(p.text, true, parse_special, pieces);
  }
  return pieces;
}

void SpecialTokenMatcher::split_pass(std::string_view text, bool normalized, bool parse_special,
                                     std::vector<Piece>& out) const {
  const auto& tokens = by_first_byte_[normalized];
  size_t start = 0;  // beginning of the pending ordinary text
  size_t i = 0;      // where the search goes on
  while (i < text.size()) {
    const Entry* hit = nullptr;
    if (const auto it = tokens.find(static_cast<unsigned char>(text[i])); it != tokens.end()) {
      for (const Entry& e : it->second) {
        if ((e.always || parse_special) && text.substr(i, e.text.size()) == e.text) {
          hit = &e;
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    const size_t end = i + hit->text.size();
    if (hit->flags.single_word && (word_before(text, i) || word_after(text, end))) {
      i = end;  // refused, and the search goes on after it
      continue;
    }
    // As in `tokenizers`, the search goes on after the token itself, so the next one may
    // begin in the whitespace this one takes in: both are kept, unless lstrip leaves the
    // next one nothing of its own (then it is dropped, as tokenizers drops empty pieces).
    size_t begin = i;
    if (hit->flags.lstrip) begin = i < start ? start : whitespace_before(text, start, i);
    const size_t stop = hit->flags.rstrip ? whitespace_after(text, end) : end;
    if (begin > start) out.push_back({text.substr(start, begin - start), -1});
    if (begin < stop) out.push_back({{}, hit->id});
    start = stop;
    i = end;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

}  // namespace fsvd
