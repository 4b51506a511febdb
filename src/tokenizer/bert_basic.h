#pragma once
// BERT's basic tokenizer, as Hugging Face `tokenizers` runs it (BertNormalizer
// then BertPreTokenizer): text -> words, before WordPiece splits each word.
#include <string>
#include <string_view>
#include <vector>

namespace fsvd {

struct BertBasicOptions {
  bool clean_text = true;          // drop NUL, U+FFFD and control characters; whitespace -> ' '
  bool handle_chinese_chars = true;  // every CJK ideograph becomes a word of its own
  bool strip_accents = true;       // NFD, then drop nonspacing marks (Mn)
  bool lowercase = true;           // full Unicode lower-casing, character by character
};

// Words of `text`: split on whitespace, every punctuation character (Unicode
// P* and ASCII punctuation) a word of its own. Invalid UTF-8 bytes read as
// U+FFFD (removed by clean_text, else kept as a character).
std::vector<std::string> bert_basic_split(std::string_view text, const BertBasicOptions& options);

}  // namespace fsvd
