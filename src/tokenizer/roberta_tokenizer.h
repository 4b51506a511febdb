#pragma once
// RoBERTa's tokenizer with the ids of Hugging Face `tokenizers`: the byte-level
// BPE of the decoders (BpeTokenizer; added tokens written in the text are
// matched, as `tokenizers` does), framed as `<s> A </s>` or
// `<s> A </s></s> B </s>` (RobertaProcessing), every token of type 0.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/encoder_tokenizer.h"

namespace fsvd {

class RobertaTokenizer : public EncoderTokenizer {
 public:
  // cls / sep: the ids of `<s>` and `</s>`; throws Error naming vocab.source
  // when they are outside the vocabulary.
  RobertaTokenizer(BpeVocab vocab, int32_t cls, int32_t sep);

  std::vector<int32_t> tokenize(std::string_view text) const override;
  int32_t vocab_size() const override { return bpe_.vocab_size(); }

 private:
  Frame frame() const override { return {cls_, sep_, true, false}; }

  BpeTokenizer bpe_;
  int32_t cls_, sep_;
};

// From a tokenizer.json: model BPE with a ByteLevel pre-tokenizer (see
// hf_tokenizer_json.h) and post_processor RobertaProcessing. Anything else is
// an Error naming `where`.
RobertaTokenizer roberta_from_json(std::string_view tokenizer_json, const std::string& where);

// From `dir`'s vocab.json and merges.txt, the way transformers converts its
// RobertaTokenizer: special tokens from tokenizer_config.json overridden by
// special_tokens_map.json (defaults <s> </s> <unk> <pad> <mask>, `<mask>`
// taking in the spaces before it), add_prefix_space from tokenizer_config.json
// (default false).
RobertaTokenizer load_roberta_vocab_merges(const std::string& dir);

}  // namespace fsvd
