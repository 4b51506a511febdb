#include "tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include <random>

namespace fsvd {
namespace {

TEST(ByteLevel, GptTwoTableSamples) {
  EXPECT_EQ(byte_to_unicode('A'), "A");
  EXPECT_EQ(byte_to_unicode('~'), "~");
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(byte_to_unicode(0x00), "\xC4\x80");  // U+0100, the first remapped byte
  EXPECT_EQ(byte_to_unicode(0xAD), "\xC5\x83");  // U+0143, the last (soft hyphen is not printable)
  EXPECT_EQ(byte_to_unicode(0xE9), "\xC3\xA9");  // printable Latin-1 'é' stays itself
}

TEST(ByteLevel, EveryByteSequenceRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string back;
  ASSERT_TRUE(unicode_to_bytes(bytes_to_unicode(all), back));
  EXPECT_EQ(back, all);

  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int trial = 0; trial < 50; ++trial) {
    std::string s(static_cast<size_t>(trial * 3 + 1), '\0');
    for (char& c : s) c = static_cast<char>(byte(rng));
    std::string out = "prefix:";
    ASSERT_TRUE(unicode_to_bytes(bytes_to_unicode(s), out));
    EXPECT_EQ(out, "prefix:" + s);
  }
}

TEST(ByteLevel, RejectsCharactersOutsideTheMapping) {
  std::string out = "kept";
  EXPECT_FALSE(unicode_to_bytes(" ", out));              // a real space is not a mapped character
  EXPECT_FALSE(unicode_to_bytes("ab\xE2\x82\xAC", out));  // '€' (3 bytes)
  EXPECT_FALSE(unicode_to_bytes("\xC4", out));            // truncated sequence
  EXPECT_FALSE(unicode_to_bytes("\xC1\x81", out));        // overlong 'A'
  EXPECT_EQ(out, "kept");
}

}  // namespace
}  // namespace fsvd
