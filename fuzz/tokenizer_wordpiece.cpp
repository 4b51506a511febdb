// libFuzzer target: the WordPiece tokenizer. Input starting with '{' is a
// tokenizer.json (then a fixed text is encoded with whatever parsed); any
// other input is text (its two halves a pair, the first byte the length
// limit) for a small built-in vocabulary. Ids must stay in the vocabulary.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace {

void check_ids(const fsvd::WordPieceTokenizer& tok, const fsvd::EncoderInput& in) {
  if (in.ids.size() != in.type_ids.size()) __builtin_trap();
  for (const int32_t id : in.ids)
    if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (!bytes.empty() && bytes[0] == '{') {
      const fsvd::WordPieceTokenizer tok = fsvd::wordpiece_from_json(bytes, "fuzz.json");
      check_ids(tok, tok.encode("Hello, wörld! 我们 [SEP] unaffable\xFF", "pair", 0));
      return 0;
    }
    static const fsvd::WordPieceTokenizer tok(
        fsvd::parse_vocab_txt("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nhello\n,\n!\n##s\na\n##a\n", "v"),
        {}, "v");
    const int max_tokens = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]) % 16;
    const std::string_view text = bytes.substr(bytes.empty() ? 0 : 1);
    check_ids(tok, tok.encode(text.substr(0, text.size() / 2), text.substr(text.size() / 2), max_tokens));
    check_ids(tok, tok.encode(text, std::nullopt, max_tokens));
  } catch (const fsvd::Error&) {
  }
  return 0;
}
