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

}  // namespace

void SpecialTokenMatcher::add(std::string text, int32_t id, bool always, TokenStrip strip) {
  if (text.empty()) return;  // an empty token would match everywhere
  auto& list = by_first_byte_[static_cast<unsigned char>(text[0])];
  list.push_back({std::move(text), id, always, strip});
  std::stable_sort(list.begin(), list.end(),
                   [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
}

std::vector<SpecialTokenMatcher::Piece> SpecialTokenMatcher::split(std::string_view text,
                                                                   bool parse_special) const {
  std::vector<Piece> pieces;
  size_t start = 0;  // beginning of the pending ordinary text
  size_t i = 0;
  while (i < text.size()) {
    const Entry* hit = nullptr;
    if (const auto it = by_first_byte_.find(static_cast<unsigned char>(text[i])); it != by_first_byte_.end()) {
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
    const size_t begin = hit->strip.left ? whitespace_before(text, start, i) : i;
    if (begin > start) pieces.push_back({text.substr(start, begin - start), -1});
    pieces.push_back({{}, hit->id});
    i += hit->text.size();
    if (hit->strip.right) i = whitespace_after(text, i);
    start = i;
  }
  if (start < text.size()) pieces.push_back({text.substr(start), -1});
  return pieces;
}

}  // namespace fsvd
