#pragma once
// The body of OpenAI's /v1/embeddings response. Pure: no I/O.
#include <cstdint>
#include <span>
#include <string>

namespace fsvd {

// Standard base64 (RFC 4648, with padding) of `bytes`.
std::string base64_encode(std::span<const unsigned char> bytes);
// base64 of the values as little-endian fp32: what encoding_format "base64" returns.
std::string base64_floats(std::span<const float> values);

// {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": ...}], "model",
//  "usage": {"prompt_tokens", "total_tokens"}} for `embeddings` [n, dimensions]. Each embedding is a
// list of numbers (the shortest decimals that read back as the same fp32 values) or, with `base64`,
// one base64 string.
std::string embedding_response(const std::string& model, std::span<const float> embeddings, int64_t dimensions,
                               bool base64, int64_t prompt_tokens);

}  // namespace fsvd
