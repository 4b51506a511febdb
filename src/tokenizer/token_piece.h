#pragma once
// The text one token adds after the tokens before it: how OpenAI-style
// log-probabilities name tokens (" world" with its leading space, where
// decoding the id alone may drop the space, as SentencePiece does at the
// start of a sequence).
#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace fsvd {

// Decodes `id` after the last few of `before` and keeps the bytes it adds;
// decodes it alone when the text before it changes (a merge across them).
// Raw bytes: part of a character when its bytes span several tokens.
std::string token_piece(const Tokenizer& tok, std::span<const int32_t> before, int32_t id);

}  // namespace fsvd
