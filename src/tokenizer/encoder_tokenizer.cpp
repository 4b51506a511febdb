#include "tokenizer/encoder_tokenizer.h"

#include <algorithm>

#include "core/error.h"

namespace fsvd {

EncoderInput EncoderTokenizer::encode(std::string_view a, std::optional<std::string_view> b, int max_tokens) const {
  const Frame f = frame();
  std::vector<int32_t> first = tokenize(a), second;
  if (b) second = tokenize(*b);
  const int64_t specials = b ? (f.double_sep ? 4 : 3) : 2;
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
  in.ids.push_back(f.cls);
  in.ids.insert(in.ids.end(), first.begin(), first.end());
  in.ids.push_back(f.sep);
  in.type_ids.assign(in.ids.size(), 0);
  if (b) {
    if (f.double_sep) in.ids.push_back(f.sep);
    in.ids.insert(in.ids.end(), second.begin(), second.end());
    in.ids.push_back(f.sep);
    in.type_ids.resize(in.ids.size(), f.pair_types ? 1 : 0);
  }
  return in;
}

}  // namespace fsvd
