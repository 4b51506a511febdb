#pragma once
// What an encoder needs from its tokenizer (WordPiece for BERT, DistilBERT and
// MiniLM; byte-level BPE for RoBERTa): one text or a pair as model input,
// framed by the model's special tokens and cut to a length limit the way
// Hugging Face tokenizers' longest_first truncation does.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "model/encoder.h"
#include "tokenizer/encoder_template.h"

namespace fsvd {

class EncoderTokenizer {
 public:
  virtual ~EncoderTokenizer() = default;

  // Ids of `text` without the framing special tokens.
  virtual std::vector<int32_t> tokenize(std::string_view text) const = 0;
  virtual int32_t vocab_size() const = 0;

  // Framed by the tokenizer's template (BERT: `[CLS] a [SEP] (b [SEP])`, b's
  // part of token type 1; RoBERTa: `<s> a </s> (</s> b </s>)`, all of type 0).
  // Truncated to max_tokens (0: no limit): the shorter text keeps what it can
  // up to half, the longer one takes the rest. Throws if max_tokens leaves no
  // room for a token of each text.
  EncoderInput encode(std::string_view a, std::optional<std::string_view> b, int max_tokens) const;

 protected:
  virtual const EncoderTemplate& frame() const = 0;
};

}  // namespace fsvd
