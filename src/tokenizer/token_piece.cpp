#include "tokenizer/token_piece.h"

#include <algorithm>
#include <vector>

namespace fsvd {

std::string token_piece(const Tokenizer& tok, std::span<const int32_t> before, int32_t id) {
  constexpr size_t kContext = 4;  // enough for a character split over byte tokens
  std::vector<int32_t> ids(before.end() - std::min(before.size(), kContext), before.end());
  const std::string prefix = tok.decode(ids);
  ids.push_back(id);
  const std::string text = tok.decode(ids);
  if (text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0) return text.substr(prefix.size());
  return tok.decode({id});
}

}  // namespace fsvd
