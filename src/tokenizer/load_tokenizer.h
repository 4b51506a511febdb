#pragma once
// Finding and building the right tokenizer for a model.
#include <memory>
#include <string>
#include <string_view>

#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

// An explicit tokenizer_path wins, chosen by its name: *.model → SentencePiece,
// *.json → Hugging Face tokenizer.json, *.gguf → GGUF metadata, a directory →
// its tokenizer.model / tokenizer.json / tokenizer.gguf / tokenizer.bin (the
// first found), anything else → llama2.c tokenizer.bin.
// Otherwise the model supplies it: a .gguf file its metadata, a Hugging Face
// directory its tokenizer files; a llama2.c checkpoint has none (Error asking
// for --tokenizer).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_path, const std::string& tokenizer_path);

// From GGUF tokenizer.ggml.* metadata: model "gpt2" (byte-level BPE) or "llama" (SentencePiece-style scores).
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf);

// From the text of a Hugging Face tokenizer.json (model type BPE with a
// ByteLevel pre-tokenizer) and, when not empty, of its tokenizer_config.json
// (bos/eos tokens, add_bos_token, chat_template). `where` names the file in errors.
std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view tokenizer_json, std::string_view config_json,
                                               const std::string& where);
// Reads `path` and the tokenizer_config.json beside it, if any.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path);
// The chat template of the tokenizer_config.json in `dir`; "" when there is none.
std::string read_config_chat_template(const std::string& dir);

}  // namespace fsvd
