#pragma once
// BERT's WordPiece tokenizer with the ids of Hugging Face `tokenizers`:
// basic tokenization (bert_basic.h), then greedy longest-match-first pieces
// ("##" marks a piece inside a word), special tokens spelled in the text
// matched first, `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` with token types,
// and longest-first truncation.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/encoder.h"
#include "tokenizer/bert_basic.h"
#include "tokenizer/special_tokens.h"

namespace fsvd {

struct WordPieceOptions {
  BertBasicOptions basic;
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]";
  std::string prefix = "##";     // marks a piece that continues a word
  int max_chars_per_word = 100;  // longer words become [UNK]
  // Tokens matched verbatim in the text before normalization.
  std::vector<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
};

class WordPieceTokenizer {
 public:
  // `vocab`: token -> id. Throws Error(where, ...) if unk/cls/sep are missing.
  WordPieceTokenizer(std::unordered_map<std::string, int32_t> vocab, WordPieceOptions options,
                     const std::string& where);

  // Ids of `text` without [CLS]/[SEP].
  std::vector<int32_t> tokenize(std::string_view text) const;
  // [CLS] a [SEP] (b [SEP]), truncated to max_tokens (0: no limit) the way
  // `tokenizers`' longest_first does: the shorter side keeps what it can up
  // to half, the longer side takes the rest. Throws if max_tokens leaves no
  // room for a token of each part.
  EncoderInput encode(std::string_view a, std::optional<std::string_view> b, int max_tokens) const;

  int32_t vocab_size() const { return vocab_size_; }
  const std::string& token(int32_t id) const { return tokens_.at(id); }

 private:
  void add_word(const std::string& word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;  // id -> token ("" for ids the vocab skips)
  WordPieceOptions options_;
  SpecialTokenMatcher specials_;
  int32_t vocab_size_ = 0, unk_ = -1, cls_ = -1, sep_ = -1;
};

// vocab.txt: one token a line, the line number its id.
std::unordered_map<std::string, int32_t> parse_vocab_txt(std::string_view text, const std::string& where);

// From a tokenizer.json whose model is WordPiece (normalizer BertNormalizer,
// pre_tokenizer BertPreTokenizer); anything else is an Error naming `where`.
WordPieceTokenizer wordpiece_from_json(std::string_view tokenizer_json, const std::string& where);

// A model directory's tokenizer: tokenizer.json, else vocab.txt with the
// lower-casing settings of tokenizer_config.json (do_lower_case, strip_accents,
// tokenize_chinese_chars; BertTokenizer's defaults when absent).
WordPieceTokenizer load_wordpiece(const std::string& dir);

}  // namespace fsvd
