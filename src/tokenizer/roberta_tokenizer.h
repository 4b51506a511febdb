#pragma once
// RoBERTa's tokenizer with the ids of Hugging Face `tokenizers`: the byte-level
// BPE of the decoders (BpeTokenizer; added tokens written in the text are
// matched, as `tokenizers` does), framed by the tokenizer.json's post-processor
// (RobertaProcessing: `<s> A </s>` or `<s> A </s></s> B </s>`, every token of
// type 0; or a TemplateProcessing, see encoder_template.h).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/encoder_tokenizer.h"

namespace fsvd {

class RobertaTokenizer : public EncoderTokenizer {
 public:
  // Throws Error naming vocab.source when a special token of `frame` is outside the vocabulary.
  RobertaTokenizer(BpeVocab vocab, EncoderTemplate frame);

  std::vector<int32_t> tokenize(std::string_view text) const override;
  int32_t vocab_size() const override { return bpe_.vocab_size(); }

 private:
  const EncoderTemplate& frame() const override { return frame_; }

  BpeTokenizer bpe_;
  EncoderTemplate frame_;
};

// From a tokenizer.json: model BPE with a ByteLevel pre-tokenizer (see
// hf_tokenizer_json.h) and a post_processor encoder_template_from_json reads.
// Anything else is an Error naming `where`.
RobertaTokenizer roberta_from_json(std::string_view tokenizer_json, const std::string& where);
RobertaTokenizer roberta_from_tokenizer(const nlohmann::json& tokenizer, const std::string& where);  // parsed

// From `dir`'s vocab.json and merges.txt, as transformers 4.x's AutoTokenizer
// loads them (roberta_vocab_merges.cpp): its RobertaTokenizer converted to the
// fast one, with the added tokens of tokenizer_config.json's
// added_tokens_decoder (else special_tokens_map.json and added_tokens.json),
// the special tokens (<s> </s> <unk> <pad> <mask> unless set otherwise, plus
// additional_special_tokens) and add_prefix_space (default false).
RobertaTokenizer load_roberta_vocab_merges(const std::string& dir);

}  // namespace fsvd
