#include "tokenizer/roberta_tokenizer.h"

#include "core/error.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/json_text.h"

namespace fsvd {
namespace {

// `vocab`, once the special tokens of `frame` are known to be in it.
BpeVocab with_specials(BpeVocab vocab, const EncoderTemplate& frame) {
  frame.check_ids(static_cast<int64_t>(vocab.tokens.size()), vocab.source);
  return vocab;
}

}  // namespace

RobertaTokenizer::RobertaTokenizer(BpeVocab vocab, EncoderTemplate frame)
    : bpe_(with_specials(std::move(vocab), frame)), frame_(std::move(frame)) {}

std::vector<int32_t> RobertaTokenizer::tokenize(std::string_view text) const {
  return bpe_.encode(text, /*add_bos=*/false, /*parse_special=*/true);
}

RobertaTokenizer roberta_from_json(std::string_view tokenizer_json, const std::string& where) {
  return roberta_from_tokenizer(parse_tokenizer_json(tokenizer_json, where), where);
}

RobertaTokenizer roberta_from_tokenizer(const nlohmann::json& j, const std::string& where) {
  try {
    check(j.is_object(), where, "not a JSON object");
    const nlohmann::json post = j.value("post_processor", nlohmann::json());
    check(!post.is_null(), where, "post_processor 'none' is not supported with a BPE model: an encoder needs ",
          "its special tokens");
    EncoderTemplate frame = encoder_template_from_json(post, where);
    return RobertaTokenizer(bpe_vocab_from_json(j, nlohmann::json::object(), where), std::move(frame));
  } catch (const nlohmann::json::exception& e) {  // a value of an unexpected JSON type
    fail(where, e.what());
  }
}

}  // namespace fsvd
