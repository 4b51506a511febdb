#pragma once
// Keeps a model's tokenizer beside its converted copy, under the names
// load_tokenizer looks for in a directory, so the copy runs without --tokenizer.
#include <string>
#include <vector>

namespace fsvd {

// Stores the tokenizer of `model_path` into `dir`, or `tokenizer_path` when
// given (any file --tokenizer accepts): a directory's tokenizer files are
// copied, a GGUF's tokenizer metadata is written as tokenizer.gguf, a
// SentencePiece .model / tokenizer.json (with the tokenizer_config.json beside
// it) / llama2.c tokenizer.bin is copied under its canonical name. Tokenizer
// files already in `dir` are removed first. Returns the names stored; empty
// when the model carries no tokenizer (llama2.c) and none was given.
std::vector<std::string> store_tokenizer(const std::string& model_path, const std::string& tokenizer_path,
                                         const std::string& dir);

}  // namespace fsvd
