#include "tokenizer/tokenizer.h"

namespace fsvd {

// True when s ends inside a UTF-8 sequence (a lead byte whose continuation
// bytes have not all arrived yet).
static bool ends_mid_character(const std::string& s) {
  size_t back = 0;
  while (back < 3 && back < s.size() && (static_cast<unsigned char>(s[s.size() - 1 - back]) & 0xC0) == 0x80)
    ++back;
  if (back == s.size()) return false;
  const unsigned char lead = static_cast<unsigned char>(s[s.size() - 1 - back]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return need > back + 1;
}

std::string StreamDecoder::decode_range(size_t begin, size_t end) const {
  return tok_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                          ids_.begin() + static_cast<std::ptrdiff_t>(end)));
}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  const std::string prefix = decode_range(prefix_offset_, read_offset_);
  const std::string full = decode_range(prefix_offset_, ids_.size());
  // Wait while the window ends mid-character or a tokenizer rewrote the context.
  if (full.size() <= prefix.size() || ends_mid_character(full) || full.compare(0, prefix.size(), prefix) != 0)
    return {};
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return full.substr(prefix.size());
}

std::string StreamDecoder::flush() {
  const std::string prefix = decode_range(prefix_offset_, read_offset_);
  const std::string full = decode_range(prefix_offset_, ids_.size());
  prefix_offset_ = read_offset_ = ids_.size();
  return full.size() > prefix.size() ? full.substr(prefix.size()) : std::string();
}

}  // namespace fsvd
