// libFuzzer target: the body of a /v1/embeddings request. Any bytes must
// parse to inputs the encoder can run (non-empty, within the token limit and
// the vocabulary, at most kMaxEmbeddingInputs) or throw ApiError with a 4xx
// status; a parsed request's response must serialise, in both formats.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/embedding_requests.h"
#include "server/embedding_responses.h"
#include "tokenizer/wordpiece_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fsvd::WordPieceTokenizer tok(
      fsvd::parse_vocab_txt("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nhello\n,\n!\n##s\na\n##a\n", "v"),
      {}, "v");
  const fsvd::EncoderLimits limits{tok.vocab_size(), 8, 4};
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    const fsvd::EmbeddingRequest r = fsvd::parse_embedding_request(body, tok, limits);
    if (r.inputs.empty() || r.inputs.size() > fsvd::kMaxEmbeddingInputs) __builtin_trap();
    for (const fsvd::EncoderInput& in : r.inputs) {
      if (in.ids.empty() || in.ids.size() > static_cast<size_t>(limits.max_tokens)) __builtin_trap();
      if (in.type_ids.size() != in.ids.size()) __builtin_trap();
      for (int32_t t : in.ids)
        if (t < 0 || t >= limits.vocab) __builtin_trap();
    }
    const std::vector<float> e(r.inputs.size() * limits.dimensions, -0.5f);
    (void)fsvd::embedding_response(r.model, e, limits.dimensions, r.base64, r.tokens());
  } catch (const fsvd::ApiError& e) {
    if (e.status < 400 || e.status > 499) __builtin_trap();
  }
  return 0;
}
