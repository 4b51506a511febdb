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

// How a token is matched in text: Hugging Face AddedToken's flags.
struct AddedTokenFlags {
  // Takes in the whitespace before / after it (RoBERTa's "<mask>" swallows the spaces before it).
  bool lstrip = false, rstrip = false;
  // Only matched where no word character (regex \w) touches it; a match so refused still
  // hides the text it covered from other tokens, as in `tokenizers`.
  bool single_word = false;
  // Matched in a second pass, over the text the other tokens left (`tokenizers` matches these
  // in the normalized text: the same text for byte-level BPE, which has no normalizer).
  bool normalized = false;
};

class SpecialTokenMatcher {
 public:
  // `always`: matched even when the caller does not ask for special tokens.
  void add(std::string text, int32_t id, bool always, AddedTokenFlags flags = {});
  bool empty() const { return by_first_byte_[0].empty() && by_first_byte_[1].empty(); }

  struct Piece {
    std::string_view text;  // ordinary text to encode normally, when id < 0
    int32_t id = -1;
  };
  // Splits `text` at the leftmost-longest occurrences of the registered tokens
  // (only the `always` ones unless parse_special), with the Unicode whitespace
  // their lstrip / rstrip takes in: first the tokens that are not `normalized`,
  // then those in the text between. Empty text pieces are dropped.
  std::vector<Piece> split(std::string_view text, bool parse_special) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool always;
    AddedTokenFlags flags;
  };
  // One pass over `text`, appending its pieces to `out`.
  void split_pass(std::string_view text, bool normalized, bool parse_special, std::vector<Piece>& out) const;

  std::unordered_map<unsigned char, std::vector<Entry>> by_first_byte_[2];  // [normalized], longest first
};

}  // namespace fsvd
