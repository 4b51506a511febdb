#pragma once
// The lines of `flashsvd batch`: one JSON request per input line, one JSON
// result per output line, in the parameter names of OpenAI's completions API.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/completion.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct BatchRequest {
  nlohmann::json id;  // the request's "id", echoed in its result (null when absent)
  std::vector<int32_t> prompt;
  GenerateOptions options;
};

// A line: {"prompt": "text"} or {"messages": [{"role": "user", "content": "..."}]}
// (the model's chat template), optionally "id" (any JSON value), "max_tokens",
// "temperature", "top_p", "top_k", "seed", "stop" (a string or a list of
// them). Parameters not given come from `defaults`. Throws Error naming the
// field for anything else: malformed JSON, unknown fields, wrong types,
// values out of range.
BatchRequest parse_batch_request(std::string_view line, const Tokenizer& tokenizer, const GenerateOptions& defaults);

// {"index", "id", "text", "prompt_tokens", "completion_tokens", "finish_reason",
// "prompt_token_ids", "token_ids", "queue_s", "first_token_s", "total_s"} of
// a finished request (its prompt's token ids, as `prompt`, and the generated
// ones; seconds from its submission to admission, to its first token, to its
// end).
nlohmann::json batch_result(size_t index, const nlohmann::json& id, const std::string& text,
                            const std::vector<int32_t>& prompt, const RequestResult& result);
// {"index", "id", "error": {"message"}} of a line that could not run.
nlohmann::json batch_error(size_t index, const nlohmann::json& id, const std::string& message);

}  // namespace fsvd
