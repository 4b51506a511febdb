#include "tokenizer/encoder_tokenizer.h"

#include <algorithm>

#include "core/error.h"

namespace fsvd {

EncoderInput EncoderTokenizer::encode(std::string_view a, std::optional<std::string_view> b, int max_tokens) const {
  const EncoderTemplate& t = frame();
  std::vector<int32_t> first = tokenize(a), second;
  if (b) second = tokenize(*b);
  const int64_t specials = t.specials(b.has_value());
  if (max_tokens > 0 && static_cast<int64_t>(first.size() + second.size()) + specials > max_tokens) {
    const int64_t budget = max_tokens - specials;
    check(budget >= (b ? 2 : 1), "tokenizer", "a limit of ", max_tokens, " tokens leaves no room for the text");
    if (!b) {
      first.resize(budget);
    } else {
      // tokenizers' longest_first in closed form.
      const bool swap = first.size() > second.size();
      int64_t n1 = static_cast<int64_t>(std::min(first.size(), second.size()));
      int64_t n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
      if (n1 + n2 > budget) {
        n1 = budget / 2;
        n2 = n1 + budget % 2;
      }
      if (swap) std::swap(n1, n2);
      first.resize(std::min<int64_t>(n1, first.size()));
      second.resize(std::min<int64_t>(n2, second.size()));
    }
  }
  EncoderInput in;
  for (const TemplatePiece& p : b ? t.pair : t.single) {
    const std::vector<int32_t>& ids = p.sequence < 0 ? p.ids : p.sequence == 0 ? first : second;
    in.ids.insert(in.ids.end(), ids.begin(), ids.end());
    in.type_ids.resize(in.ids.size(), p.type_id);
  }
  return in;
}

}  // namespace fsvd
