#pragma once
// The byte-level BPE vocabulary of a Hugging Face tokenizer.json, shared by the
// decoders' tokenizer (load_tokenizer.h) and RoBERTa's (roberta_tokenizer.h).
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/bpe_tokenizer.h"

namespace fsvd {

// Model BPE, no normalizer, pre-tokenizers ByteLevel, Split (Isolated), Digits
// and Sequences of them; added tokens (special ones are control tokens, the
// others always matched; their lstrip, rstrip, single_word and normalized
// kept). BOS, EOS, add_bos_token and the chat template come from `config`
// (tokenizer_config.json; {} when none).
// Anything else is an Error naming `where`; so may be a json::exception for a
// value of an unexpected type, which callers turn into an Error.
BpeVocab bpe_vocab_from_json(const nlohmann::json& tokenizer, const nlohmann::json& config, const std::string& where);

}  // namespace fsvd
