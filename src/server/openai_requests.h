#pragma once
// The bodies of OpenAI's /v1/completions and /v1/chat/completions, parsed and
// checked against the model before anything runs. Pure: no I/O, fuzzed.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/completion.h"
#include "server/api_error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

// What the model allows.
struct ModelLimits {
  int context = 0;  // positions of one sequence (prompt + generated)
  int vocab = 0;
};

struct CompletionRequest {
  bool chat = false;
  std::string model;                          // as given ("" when absent)
  std::vector<std::vector<int32_t>> prompts;  // one choice each (chat: one)
  GenerateOptions options;
  bool stream = false, include_usage = false;
  int logprobs = -1;  // most likely alternatives per token; -1: no logprobs
  bool echo = false;  // completions: the prompt is part of the text (and of the logprobs)
};

// Chat messages: {"role": system|user|assistant, "content": string or a list
// of {"type": "text", "text": ...} parts, "name" (ignored)}. Throws Error.
std::vector<ChatMessage> parse_chat_messages(const nlohmann::json& messages);
// Token ids of a chat conversation under the model's template, ready for the
// assistant's answer.
std::vector<int32_t> chat_prompt(const Tokenizer& tok, const std::vector<ChatMessage>& messages);
// Token ids of a text prompt (BOS alone for an empty one).
std::vector<int32_t> text_prompt(const Tokenizer& tok, const std::string& text);

// Throw ApiError (400 for malformed or out-of-range fields, unknown fields,
// unsupported features such as n > 1 or penalties, prompts that do not fit
// the context).
CompletionRequest parse_completion_request(std::string_view body, const Tokenizer& tok, const ModelLimits& limits);
CompletionRequest parse_chat_request(std::string_view body, const Tokenizer& tok, const ModelLimits& limits);

}  // namespace fsvd
