#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace fsvd {

void SpecialTokenMatcher::add(std::string text, int32_t id, bool always) {
  if (text.empty()) return;  // an empty token would match everywhere
  auto& list = by_first_byte_[static_cast<unsigned char>(text[0])];
  list.push_back({std::move(text), id, always});
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
    if (i > start) pieces.push_back({text.substr(start, i - start), -1});
    pieces.push_back({{}, hit->id});
    i += hit->text.size();
    start = i;
  }
  if (start < text.size()) pieces.push_back({text.substr(start), -1});
  return pieces;
}

}  // namespace fsvd
