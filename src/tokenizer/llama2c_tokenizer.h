#pragma once
// llama2.c tokenizer.bin (tok512.bin, tokenizer.bin): int32 max_token_length,
// then per token float32 score, int32 length and the piece bytes, up to the end
// of the file (the count is the model's vocab size, not stored). BOS is 1, EOS 2.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tokenizer/scored_tokenizer.h"

namespace fsvd {

std::unique_ptr<ScoredTokenizer> load_llama2c_tokenizer(const std::string& path);
// `name` is used in errors.
std::unique_ptr<ScoredTokenizer> parse_llama2c_tokenizer(const uint8_t* bytes, size_t size, const std::string& name);

}  // namespace fsvd
