#pragma once
// The body of OpenAI's /v1/embeddings, parsed, tokenized and checked against
// the encoder before anything runs. Pure: no I/O, fuzzed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/encoder.h"
#include "server/api_error.h"
#include "tokenizer/encoder_tokenizer.h"

namespace fsvd {

// What the encoder allows.
struct EncoderLimits {
  int vocab = 0;
  int max_tokens = 0;  // text is truncated to this many tokens (specials included); longer id lists are refused
  int dimensions = 0;  // of each embedding
};

// Inputs of one request at most (OpenAI's limit).
constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
  std::string model;                // as given ("" when absent)
  std::vector<EncoderInput> inputs;  // one embedding each, in order
  bool base64 = false;              // encoding_format "base64": little-endian fp32 bytes
  // Tokens of every input together (what usage reports).
  int64_t tokens() const;
};

// `input`: a string, a list of strings, a list of token ids or a list of such
// lists (mixed lists of strings and id lists too). Text is tokenized as
// `flashsvd embed` does: `[CLS] text [SEP]`, truncated to limits.max_tokens.
// Token ids are the encoder's whole input as given (no [CLS] / [SEP] added),
// ids of the encoder's vocabulary, at most limits.max_tokens of them.
// Throws ApiError (400 naming the field) for empty strings or lists, more
// than kMaxEmbeddingInputs inputs, ids out of range, `encoding_format` other
// than "float" or "base64", `dimensions` other than limits.dimensions, and
// unknown fields; `user` is accepted and ignored.
EmbeddingRequest parse_embedding_request(std::string_view body, const EncoderTokenizer& tok,
                                         const EncoderLimits& limits);

}  // namespace fsvd
