#include "apps/batch_requests.h"

#include "core/error.h"
#include "server/json_params.h"
#include "server/openai_requests.h"
#include "server/openai_responses.h"

namespace fsvd {
namespace {

using nlohmann::json;

constexpr size_t kMaxStops = 16;

std::vector<int32_t> prompt_tokens(const json& req, const Tokenizer& tok) {
  const bool has_prompt = req.contains("prompt"), has_messages = req.contains("messages");
  check(has_prompt != has_messages, "request", "needs exactly one of \"prompt\" and \"messages\"");
  if (has_prompt) return text_prompt(tok, json_text(req["prompt"], "prompt"));
  return chat_prompt(tok, parse_chat_messages(req["messages"]));
}

}  // namespace

BatchRequest parse_batch_request(std::string_view line, const Tokenizer& tok, const GenerateOptions& defaults) {
  const json req = parse_json_object(line);
  check_known_fields(req, {"id", "prompt", "messages", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop"});
  BatchRequest out;
  if (req.contains("id")) out.id = req["id"];
  out.options = defaults;
  if (req.contains("max_tokens"))
    out.options.max_new_tokens = static_cast<int>(json_integer(req["max_tokens"], "max_tokens", 0, kMaxTokensLimit));
  read_sampling_fields(req, 100, kMaxStops, out.options);
  out.prompt = prompt_tokens(req, tok);
  return out;
}

nlohmann::json batch_result(size_t index, const nlohmann::json& id, const std::string& text,
                            const std::vector<int32_t>& prompt, const RequestResult& result) {
  return {{"index", index},
          {"id", id},
          {"text", text},
          {"prompt_tokens", result.prompt_tokens},
          {"completion_tokens", result.tokens.size()},
          {"finish_reason", finish_reason(result.stop_reason)},
          {"prompt_token_ids", prompt},
          {"token_ids", result.tokens},
          {"queue_s", result.queue_seconds},
          {"first_token_s", result.first_token_seconds},
          {"total_s", result.total_seconds}};
}

nlohmann::json batch_error(size_t index, const nlohmann::json& id, const std::string& message) {
  return {{"index", index}, {"id", id}, {"error", {{"message", message}}}};
}

}  // namespace fsvd
