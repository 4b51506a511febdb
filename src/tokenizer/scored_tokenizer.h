#pragma once
// SentencePiece-style BPE over scored pieces, as llama2.c's run.c encodes:
// optional dummy-prefix space, one token per UTF-8 character (raw bytes
// <0xXX> when the character is not a piece), then repeatedly merge the
// adjacent pair whose concatenation is the highest-scoring piece (leftmost on
// ties). Used for llama2.c tokenizer.bin files and GGUF "llama" vocabularies.
// One deliberate difference from run.c: merges never produce a control,
// unknown or <0xXX> piece from its literal spelling in the text ("<unk>",
// "<0x41>" stay text), as in SentencePiece.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct ScoredVocab {
  std::string source;               // file name for errors
  std::vector<std::string> pieces;  // id -> text, with real spaces (not "▁")
  std::vector<float> scores;
  std::vector<TokenKind> kinds;
  int32_t bos = -1, eos = -1, unk = -1;
  bool add_bos = true;
  bool add_dummy_prefix = true;     // encode " " + text, as SentencePiece does
  std::string chat_template;
};

class ScoredTokenizer : public Tokenizer {
 public:
  // Validates ids, sizes and scores; throws Error naming vocab.source.
  explicit ScoredTokenizer(ScoredVocab vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false) const override;
  // Control tokens (BOS, EOS) produce no text; a leading space right after BOS
  // is dropped (run.c's decode); <0xXX> pieces are their raw byte. So
  // decode(encode(text, true)) == text, except (as in run.c) for text starting
  // with a UTF-8 continuation byte, where the dummy space becomes a raw byte.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.pieces.size()); }
  int32_t bos_id() const override { return vocab_.bos; }
  int32_t eos_id() const override { return vocab_.eos; }
  bool adds_bos() const override { return vocab_.add_bos && vocab_.bos >= 0; }
  std::string chat_template() const override { return vocab_.chat_template; }

 private:
  void encode_text(std::string_view text, std::vector<int32_t>& out) const;

  ScoredVocab vocab_;
  std::unordered_map<std::string, int32_t> ids_;  // pieces that text may turn into
  int32_t byte_ids_[256];            // <0xXX> piece of each byte, -1 if none
  std::vector<int16_t> piece_byte_;  // id -> byte value of a <0xXX> piece, -1 otherwise
  SpecialTokenMatcher specials_;
};

}  // namespace fsvd
