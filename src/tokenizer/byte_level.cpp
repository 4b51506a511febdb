#include "tokenizer/byte_level.h"

#include <array>

namespace fsvd {
namespace {

std::string utf8_of(uint32_t cp) {  // cp < 0x800 here: the mapping never goes higher
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

struct ByteTables {
  static constexpr uint32_t kCodepoints = 256 + 68;  // every mapped character is below this
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, kCodepoints> to_byte;  // -1 for characters outside the mapping

  // Printable Latin-1 bytes map to themselves; the other 68 bytes map, in
  // order, to U+0100 onwards (the table of GPT-2's encoder.py).
  ByteTables() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : next++;
      to_unicode[b] = utf8_of(cp);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

std::string bytes_to_unicode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += byte_to_unicode(static_cast<uint8_t>(c));
  return out;
}

bool unicode_to_bytes(std::string_view text, std::string& out) {
  const auto& to_byte = tables().to_byte;
  std::string bytes;
  bytes.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    // Every mapped character is ASCII or a two-byte UTF-8 sequence.
    const auto b0 = static_cast<uint8_t>(text[i]);
    uint32_t cp = b0;
    size_t len = 1;
    if ((b0 & 0xE0) == 0xC0) {
      if (i + 1 >= text.size() || (static_cast<uint8_t>(text[i + 1]) & 0xC0) != 0x80) return false;
      cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
      len = 2;
      if (cp < 0x80) return false;  // overlong
    } else if (b0 >= 0x80) {
      return false;
    }
    if (cp >= ByteTables::kCodepoints || to_byte[cp] < 0) return false;
    bytes += static_cast<char>(to_byte[cp]);
    i += len;
  }
  out += bytes;
  return true;
}

}  // namespace fsvd
