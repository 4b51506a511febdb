// StreamDecoder over the real tokenizers: multi-byte characters split across
// byte tokens must come out whole, and the chunks must add up to decode().
#include <gtest/gtest.h>

#include <filesystem>

#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

bool ends_inside_utf8_char(const std::string& s) {
  size_t i = s.size(), cont = 0;
  while (i > 0 && (static_cast<uint8_t>(s[i - 1]) & 0xC0) == 0x80) --i, ++cont;
  if (i == 0) return false;
  const auto lead = static_cast<uint8_t>(s[i - 1]);
  const size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  return cont < need;
}

void check_stream(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  StreamDecoder stream(tok);
  std::string all;
  for (const int32_t id : ids) {
    const std::string chunk = stream.push(id);
    all += chunk;
    EXPECT_FALSE(ends_inside_utf8_char(all)) << "chunk '" << chunk << "'";
  }
  all += stream.flush();
  EXPECT_EQ(all, tok.decode(ids));
}

const char* const kText = "Grüße 中文 😀👍🏽 — ok\n";

TEST(StreamDecoder, Llama2ByteFallbackCharacters) {
  const std::string path = testing::shared_data("tokenizers/llama2/tokenizer.bin");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const auto tok = load_llama2c_tokenizer(path);
  const auto ids = tok->encode(kText, true);
  size_t byte_tokens = 0;
  for (const int32_t id : ids) byte_tokens += id >= 3 && id < 259;
  ASSERT_GT(byte_tokens, 4u);  // the emoji really are split into bytes
  check_stream(*tok, ids);
}

TEST(StreamDecoder, SmolLm2ByteLevelTokens) {
  const std::string gguf = testing::smollm2_gguf();
  if (gguf.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (set FLASHSVD_SMOLLM2_GGUF)";
  const auto tok = load_tokenizer(gguf, "");
  check_stream(*tok, tok->encode(kText, false));
}

}  // namespace
}  // namespace fsvd
