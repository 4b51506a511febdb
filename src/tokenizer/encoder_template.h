#pragma once
// How an encoder frames one text, or a pair, with special tokens and token
// types: the post-processors of Hugging Face `tokenizers` (TemplateProcessing,
// RobertaProcessing, BertProcessing) in one form, shared by WordPiece and BPE.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fsvd {

struct TemplatePiece {
  int sequence = -1;         // 0: the first text, 1: the second, -1: the special tokens `ids`
  std::vector<int32_t> ids;  // when sequence < 0
  int32_t type_id = 0;       // of every token of the piece
};

struct EncoderTemplate {
  // `single` holds the first text once; `pair` each text once.
  std::vector<TemplatePiece> single, pair;

  static EncoderTemplate bert(int32_t cls, int32_t sep);     // [CLS] A [SEP] (B:1 [SEP]:1)
  static EncoderTemplate roberta(int32_t cls, int32_t sep);  // <s> A </s> (</s> B </s>), all of type 0

  // The special tokens it adds to one text (pair: to two).
  int64_t specials(bool pair) const;
  // Throws Error naming `where` when a special token id is outside [0, vocab_size).
  void check_ids(int64_t vocab_size, const std::string& where) const;
};

// A tokenizer.json's post_processor: TemplateProcessing, RobertaProcessing,
// BertProcessing, or a Sequence of one of them and ByteLevel steps (which only
// move offsets). Anything else is an Error naming `where`; so is a template that
// cannot frame the texts (one used twice or not at all, $B in the single
// template, a special token it does not define).
EncoderTemplate encoder_template_from_json(const nlohmann::json& post_processor, const std::string& where);

}  // namespace fsvd
