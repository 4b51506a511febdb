#pragma once
// The JSON the server answers with, in OpenAI's formats: completion and chat
// completion bodies, their streamed chunks (server-sent events), usage,
// log-probabilities and error objects. Pure: no I/O.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/token_logprobs.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

// OpenAI's finish_reason of an engine stop reason: "stop" (a stop id or
// string), "abort" (cancelled: the server is shutting down) or "length".
const char* finish_reason(const std::string& stop_reason);

// What identifies one response and each of its chunks.
struct ResponseHeader {
  bool chat = false;
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
};
nlohmann::json usage_json(const Usage& usage);

// One choice of a whole response.
struct Choice {
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs;  // null when not asked for
};
nlohmann::json response_body(const ResponseHeader& h, const std::vector<Choice>& choices, const Usage& usage);

// One streamed chunk of choice `index`: its new text (chat: the first chunk
// also names the assistant role), the log-probabilities of its new tokens
// (null: none), and finish_reason on its last chunk (null before).
// `usage_field`: "usage": null is present (the client asked for usage at the end).
nlohmann::json stream_chunk(const ResponseHeader& h, int index, std::string_view text, bool first,
                            const nlohmann::json& logprobs, const char* finish, bool usage_field);
// The chunk after the last one when usage was asked for: no choices.
nlohmann::json usage_chunk(const ResponseHeader& h, const Usage& usage);
// "data: <json>\n\n", and the stream's end.
std::string sse_event(const nlohmann::json& chunk);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// {"error": {"message", "type", "param", "code"}} (param and code null when empty).
nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param = "",
                          const std::string& code = "");

// JSON text safe for any bytes a tokenizer produced (invalid UTF-8 replaced).
std::string dump_json(const nlohmann::json& j);

// Log-probabilities of one choice's tokens, in the endpoint's format:
// completions {"tokens", "token_logprobs", "top_logprobs", "text_offset"},
// chat {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}.
// Tokens are named by the text they add after the ones before them.
class LogprobsWriter {
 public:
  // `context`: the tokens before the first one added (the prompt, unless it is echoed).
  LogprobsWriter(const Tokenizer& tok, bool chat, std::span<const int32_t> context);
  // A token without a log-probability (an echoed prompt's first: completions only).
  void add_unscored(int32_t token);
  void add(const TokenLogprobs& lp);
  // Everything added since the last take().
  nlohmann::json take();

 private:
  nlohmann::json empty() const;
  std::string piece(int32_t token) const;
  void add_entry(int32_t token, const nlohmann::json& logprob, const nlohmann::json& top);

  const Tokenizer& tok_;
  bool chat_;
  std::vector<int32_t> before_;
  int64_t text_offset_ = 0;  // characters of the text so far (completions)
  nlohmann::json pending_;
};

}  // namespace fsvd
