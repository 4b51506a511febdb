#pragma once
// Token kinds (GGUF's tokenizer.ggml.token_type numbering) and the matcher that
// cuts special tokens written literally in text out before normal encoding.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fsvd {

enum class TokenKind : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // BOS, EOS, <|im_start|>: matched in text only when asked
  kUserDefined = 4,  // added tokens that are always matched in text
  kUnused = 5,
  kByte = 6,         // <0xXX> byte fallback pieces
};

// Whitespace a token takes in with it when matched (Hugging Face AddedToken's
// lstrip / rstrip: RoBERTa's "<mask>" swallows the spaces before it).
struct TokenStrip {
  bool left = false, right = false;
};

class SpecialTokenMatcher {
 public:
  // `always`: matched even when the caller does not ask for special tokens.
  void add(std::string text, int32_t id, bool always, TokenStrip strip = {});
  bool empty() const { return by_first_byte_.empty(); }

  struct Piece {
    std::string_view text;  // ordinary text to encode normally, when id < 0
    int32_t id = -1;
  };
  // Splits `text` at the leftmost-longest occurrences of the registered tokens
  // (only the `always` ones unless parse_special), with the Unicode whitespace
  // their strip takes in. Empty text pieces are dropped.
  std::vector<Piece> split(std::string_view text, bool parse_special) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool always;
    TokenStrip strip;
  };
  std::unordered_map<unsigned char, std::vector<Entry>> by_first_byte_;  // longest first
};

}  // namespace fsvd
