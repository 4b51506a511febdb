// libFuzzer target: RoBERTa's tokenizer. Input starting with '{' is a
// tokenizer.json (then a fixed pair is encoded with whatever parsed); any other
// input is text (its two halves a pair, the first byte the length limit) for a
// built-in byte-level vocabulary with RoBERTa's specials. Ids must stay in the vocabulary.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/roberta_tokenizer.h"

namespace {

void check_ids(const fsvd::RobertaTokenizer& tok, const fsvd::EncoderInput& in) {
  if (in.ids.size() != in.type_ids.size()) __builtin_trap();
  for (const int32_t id : in.ids)
    if (id < 0 || id >= tok.vocab_size()) __builtin_trap();
}

// <s> <pad> </s> <unk> <mask> (which takes in the spaces before it), the 256 bytes, "Ġt" and "he".
fsvd::RobertaTokenizer builtin() {
  fsvd::BpeVocab v;
  v.source = "builtin";
  for (const char* s : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
    v.tokens.push_back(s);
    v.kinds.push_back(fsvd::TokenKind::kControl);
  }
  v.added_flags[4] = {true, false};
  for (int b = 0; b < 256; ++b) v.tokens.push_back(fsvd::byte_to_unicode(static_cast<uint8_t>(b)));
  v.merges = {{"Ġ", "t"}, {"h", "e"}};
  v.tokens.insert(v.tokens.end(), {"Ġt", "he"});
  v.kinds.resize(v.tokens.size(), fsvd::TokenKind::kNormal);
  v.pretokenize = {{fsvd::kGpt2SplitPattern, false, false}};
  return fsvd::RobertaTokenizer(std::move(v), fsvd::EncoderTemplate::roberta(0, 2));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (!bytes.empty() && bytes[0] == '{') {
      const fsvd::RobertaTokenizer tok = fsvd::roberta_from_json(bytes, "fuzz.json");
      check_ids(tok, tok.encode("Hello, wörld! 我们 <mask> </s>the\xFF", "  pair <s>", 0));
      return 0;
    }
    static const fsvd::RobertaTokenizer tok = builtin();
    const int max_tokens = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]) % 16;
    const std::string_view text = bytes.substr(bytes.empty() ? 0 : 1);
    check_ids(tok, tok.encode(text.substr(0, text.size() / 2), text.substr(text.size() / 2), max_tokens));
    check_ids(tok, tok.encode(text, std::nullopt, max_tokens));
  } catch (const fsvd::Error&) {
  }
  return 0;
}
