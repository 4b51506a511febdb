#include "tokenizer/tokenizer.h"

namespace fsvd {

// Length of the longest prefix of s that does not end inside a UTF-8 sequence.
static size_t complete_utf8_prefix(const std::string& s) {
  size_t n = s.size();
  size_t back = 0;
  while (back < 4 && back < n && (static_cast<unsigned char>(s[n - 1 - back]) & 0xC0) == 0x80) ++back;
  if (back == n) return n;  // only continuation bytes: not valid UTF-8 anyway, emit
  const unsigned char lead = static_cast<unsigned char>(s[n - 1 - back]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return need > back + 1 ? n - 1 - back : n;
}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  const std::string text = tok_.decode(ids_);
  const size_t ready = complete_utf8_prefix(text);
  if (ready <= emitted_) return {};
  std::string out = text.substr(emitted_, ready - emitted_);
  emitted_ = ready;
  return out;
}

std::string StreamDecoder::flush() {
  const std::string text = tok_.decode(ids_);
  std::string out = emitted_ < text.size() ? text.substr(emitted_) : std::string();
  emitted_ = text.size();
  return out;
}

}  // namespace fsvd
