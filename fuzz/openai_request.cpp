// libFuzzer target: the body of a /v1/completions or /v1/chat/completions
// request (the first byte picks which). Any bytes must parse to a request
// whose prompts fit the context and the vocabulary, or throw ApiError with an
// HTTP status; a parsed request's response must serialise.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/openai_requests.h"
#include "server/openai_responses.h"
#include "testing/byte_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fsvd::testing::ByteTokenizer tokenizer;
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const fsvd::ModelLimits limits{128, tokenizer.vocab_size()};
  try {
    const fsvd::CompletionRequest r = chat ? fsvd::parse_chat_request(body, tokenizer, limits)
                                           : fsvd::parse_completion_request(body, tokenizer, limits);
    if (r.prompts.empty()) __builtin_trap();
    for (const auto& p : r.prompts) {
      if (p.empty() || static_cast<int>(p.size()) + r.options.max_new_tokens > limits.context) __builtin_trap();
      for (int32_t t : p)
        if (t < 0 || t >= limits.vocab) __builtin_trap();
    }
    const fsvd::ResponseHeader h{chat, "id", 0, r.model};
    (void)fsvd::dump_json(fsvd::response_body(h, {{"text\xff", "stop", nullptr}}, {1, 1}));
  } catch (const fsvd::ApiError& e) {
    if (e.status < 400 || e.status > 499) __builtin_trap();
  }
  return 0;
}
