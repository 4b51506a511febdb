#pragma once
// BERT's WordPiece tokenizer with the ids of Hugging Face `tokenizers`:
// basic tokenization (bert_basic.h), then greedy longest-match-first pieces
// ("##" marks a piece inside a word), special tokens spelled in the text
// matched first; framing (tokenizer.json's post-processor, else BERT's) and
// truncation are EncoderTokenizer's.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bert_basic.h"
#include "tokenizer/encoder_tokenizer.h"
#include "tokenizer/special_tokens.h"

namespace fsvd {

struct WordPieceOptions {
  BertBasicOptions basic;
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]";
  std::string prefix = "##";     // marks a piece that continues a word
  int max_chars_per_word = 100;  // longer words become [UNK]
  // Tokens matched verbatim in the text before normalization.
  std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  // Unset: `[CLS] A [SEP]`, a pair `[CLS] A [SEP] B [SEP]` with B's part of type 1.
  std::optional<EncoderTemplate> frame;
};

class WordPieceTokenizer : public EncoderTokenizer {
 public:
  // `vocab`: token -> id. Throws Error(where, ...) if unk (cls, sep without a
  // frame) is missing or a special token of the frame is outside the vocabulary.
  WordPieceTokenizer(std::unordered_map<std::string, int32_t> vocab, WordPieceOptions options,
                     const std::string& where);

  // Ids of `text` without [CLS]/[SEP].
  std::vector<int32_t> tokenize(std::string_view text) const override;
  int32_t vocab_size() const override { return vocab_size_; }

 private:
  const EncoderTemplate& frame() const override { return frame_; }
  void add_word(const std::string& word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  WordPieceOptions options_;
  SpecialTokenMatcher specials_;
  EncoderTemplate frame_;
  int32_t vocab_size_ = 0, unk_ = -1;
};

// vocab.txt: one token a line, the line number its id.
std::unordered_map<std::string, int32_t> parse_vocab_txt(std::string_view text, const std::string& where);

// From a tokenizer.json whose model is WordPiece (normalizer BertNormalizer,
// pre_tokenizer BertPreTokenizer, a post_processor encoder_template_from_json
// reads, or none for BERT's framing); anything else is an Error naming `where`.
WordPieceTokenizer wordpiece_from_json(std::string_view tokenizer_json, const std::string& where);

// A model directory's tokenizer: tokenizer.json, else vocab.txt with the
// lower-casing settings of tokenizer_config.json (do_lower_case, strip_accents,
// tokenize_chinese_chars; BertTokenizer's defaults when absent).
WordPieceTokenizer load_wordpiece(const std::string& dir);

}  // namespace fsvd
