#pragma once
// GPT-2's reversible mapping between raw bytes and printable Unicode characters,
// used by byte-level BPE vocabularies (a space is stored as "Ġ", a newline as "Ċ").
#include <cstdint>
#include <string>
#include <string_view>

namespace fsvd {

// UTF-8 of the character that stands for byte b.
const std::string& byte_to_unicode(uint8_t b);
// Every byte of `bytes` replaced by its character.
std::string bytes_to_unicode(std::string_view bytes);
// Inverse of bytes_to_unicode: appends the bytes to `out`; false (out unchanged)
// when `text` holds a character outside the mapping.
bool unicode_to_bytes(std::string_view text, std::string& out);

}  // namespace fsvd
