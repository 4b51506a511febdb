#include "server/openai_requests.h"

#include <functional>

#include "runtime/token_logprobs.h"
#include "server/json_params.h"

namespace fsvd {
namespace {

using nlohmann::json;

constexpr double kMaxTemperature = 2;  // OpenAI's range
constexpr size_t kMaxStops = 4;        // OpenAI's limit
constexpr size_t kMaxPrompts = 128;    // choices of one completions request
constexpr int kDefaultCompletionTokens = 16;  // OpenAI's default for /v1/completions

[[noreturn]] void refuse(const std::string& param, const std::string& message, std::string code = "") {
  throw ApiError(400, "invalid_request_error", param, std::move(code), param.empty() ? message : param + ": " + message);
}

// A field that is accepted only at its neutral value (never silently ignored).
void require_neutral(const json& req, const char* name, const std::function<bool(const json&)>& neutral,
                     const char* why) {
  if (req.contains(name) && !req[name].is_null() && !neutral(req[name])) refuse(name, why);
}

std::vector<int32_t> token_list(const json& v, const ModelLimits& limits) {
  std::vector<int32_t> ids;
  for (const json& t : v) ids.push_back(static_cast<int32_t>(json_integer(t, "prompt", 0, limits.vocab - 1)));
  return ids;
}

std::vector<std::vector<int32_t>> completion_prompts(const json& p, const Tokenizer& tok, const ModelLimits& limits) {
  check(!p.is_null(), "prompt", "is required");
  if (p.is_string()) return {text_prompt(tok, p.get<std::string>())};
  check(p.is_array() && !p.empty(), "prompt", "must be a string, a list of strings, a list of token ids or a list "
        "of such lists, and not empty");
  if (p[0].is_number()) return {token_list(p, limits)};
  check(p.size() <= kMaxPrompts, "prompt", "at most ", kMaxPrompts, " prompts in one request");
  std::vector<std::vector<int32_t>> out;
  for (const json& item : p) {
    if (item.is_string()) {
      out.push_back(text_prompt(tok, item.get<std::string>()));
    } else {
      check(item.is_array() && !item.empty(), "prompt", "each prompt must be a string or a non-empty list of token ids");
      out.push_back(token_list(item, limits));
    }
  }
  return out;
}

// Fields both endpoints share.
void read_common(const json& req, CompletionRequest& out) {
  if (req.contains("model") && !req["model"].is_null()) out.model = json_text(req["model"], "model");
  if (req.contains("stream") && !req["stream"].is_null()) out.stream = json_bool(req["stream"], "stream");
  if (req.contains("stream_options") && !req["stream_options"].is_null()) {
    const json& so = req["stream_options"];
    check(out.stream, "stream_options", "only allowed with \"stream\": true");
    check(so.is_object(), "stream_options", "must be an object");
    check_known_fields(so, {"include_usage"});
    if (so.contains("include_usage")) out.include_usage = json_bool(so["include_usage"], "include_usage");
  }
  read_sampling_fields(req, kMaxTemperature, kMaxStops, out.options);
  if (req.contains("ignore_eos") && !req["ignore_eos"].is_null())
    out.options.ignore_eos = json_bool(req["ignore_eos"], "ignore_eos");
  if (req.contains("user") && !req["user"].is_null()) json_text(req["user"], "user");
  require_neutral(req, "n", [](const json& v) { return v == 1; }, "only n = 1 is supported");
  require_neutral(req, "best_of", [](const json& v) { return v == 1; }, "only best_of = 1 is supported");
  for (const char* penalty : {"presence_penalty", "frequency_penalty"})
    require_neutral(req, penalty, [](const json& v) { return v.is_number() && v.get<double>() == 0; },
                    "penalties are not supported (only 0)");
  require_neutral(req, "logit_bias", [](const json& v) { return v.is_object() && v.empty(); },
                  "logit_bias is not supported");
  require_neutral(req, "suffix", [](const json&) { return false; }, "suffix is not supported");
}

// The token limit (`limit`, or null for `default_tokens`; -1: the rest of the
// context), checked against each prompt and the context.
void set_max_tokens(const json& limit, int min_tokens, int default_tokens, const ModelLimits& limits,
                    CompletionRequest& out) {
  size_t longest = 0;
  for (const auto& p : out.prompts) longest = std::max(longest, p.size());
  const bool score_only = out.echo && !limit.is_null() && limit == 0;  // a prompt may fill the whole context
  if (static_cast<int64_t>(longest) > limits.context || (static_cast<int64_t>(longest) == limits.context && !score_only))
    refuse(out.chat ? "messages" : "prompt", "the prompt has " + std::to_string(longest) + " tokens; the context holds " +
           std::to_string(limits.context) + " (prompt and completion together)", "context_length_exceeded");
  const int room = limits.context - static_cast<int>(longest);
  if (limit.is_null()) {
    out.options.max_new_tokens = default_tokens < 0 ? room : std::min(default_tokens, room);
    return;
  }
  const int64_t n = json_integer(limit, "max_tokens", min_tokens, kMaxTokensLimit);
  if (n > room)
    refuse("max_tokens", "the prompt has " + std::to_string(longest) + " tokens and max_tokens is " +
           std::to_string(n) + ": more than the context of " + std::to_string(limits.context) + " holds",
           "context_length_exceeded");
  out.options.max_new_tokens = static_cast<int>(n);
}

const json& field(const json& req, const char* name) {
  static const json null;
  return req.contains(name) ? req[name] : null;
}

CompletionRequest parse(std::string_view body, const std::function<void(const json&, CompletionRequest&)>& read) {
  CompletionRequest out;
  read_request_body(body, [&](const json& req) { read(req, out); });
  return out;
}

}  // namespace

std::vector<ChatMessage> parse_chat_messages(const json& list) {
  check(list.is_array() && !list.empty(), "messages", "must be a non-empty list");
  std::vector<ChatMessage> messages;
  for (const json& m : list) {
    check(m.is_object(), "messages", "each message must be an object");
    check_known_fields(m, {"role", "content", "name"});
    check(m.contains("role") && m.contains("content"), "messages", "each message needs \"role\" and \"content\"");
    const std::string role = json_text(m["role"], "role");
    check(role == "system" || role == "user" || role == "assistant", "role",
          "must be system, user or assistant, got \"", role, "\"");
    if (m.contains("name")) json_text(m["name"], "name");
    const json& content = m["content"];
    std::string text;
    if (content.is_array()) {
      for (const json& part : content) {
        check(part.is_object(), "content", "each part must be an object");
        check_known_fields(part, {"type", "text"});
        check(part.contains("type") && json_text(part["type"], "type") == "text", "content",
              "only parts of type \"text\" are supported");
        check(part.contains("text"), "content", "a text part needs \"text\"");
        if (!text.empty()) text += '\n';
        text += json_text(part["text"], "text");
      }
    } else {
      text = json_text(content, "content");
    }
    messages.push_back({role, std::move(text)});
  }
  return messages;
}

std::vector<int32_t> chat_prompt(const Tokenizer& tok, const std::vector<ChatMessage>& messages) {
  return tok.encode(apply_chat_template(tok, messages, true), tok.adds_bos(), true);
}

std::vector<int32_t> text_prompt(const Tokenizer& tok, const std::string& text) {
  if (!text.empty()) return tok.encode(text, tok.adds_bos());
  check(tok.bos_id() >= 0, "prompt", "empty, and this tokenizer has no BOS token to start from");
  return {tok.bos_id()};
}

CompletionRequest parse_completion_request(std::string_view body, const Tokenizer& tok, const ModelLimits& limits) {
  return parse(body, [&](const json& req, CompletionRequest& out) {
    check_known_fields(req, {"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "n",
                             "stream", "stream_options", "logprobs", "echo", "presence_penalty", "frequency_penalty",
                             "user", "logit_bias", "best_of", "ignore_eos", "suffix"});
    read_common(req, out);
    if (!field(req, "logprobs").is_null())
      out.logprobs = static_cast<int>(json_integer(req["logprobs"], "logprobs", 0, kMaxTopLogprobs));
    if (!field(req, "echo").is_null()) out.echo = json_bool(req["echo"], "echo");
    out.prompts = completion_prompts(field(req, "prompt"), tok, limits);
    set_max_tokens(field(req, "max_tokens"), 0, kDefaultCompletionTokens, limits, out);
  });
}

CompletionRequest parse_chat_request(std::string_view body, const Tokenizer& tok, const ModelLimits& limits) {
  return parse(body, [&](const json& req, CompletionRequest& out) {
    check_known_fields(req, {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
                             "top_k", "seed", "stop", "n", "stream", "stream_options", "logprobs", "top_logprobs",
                             "presence_penalty", "frequency_penalty", "user", "logit_bias", "ignore_eos"});
    out.chat = true;
    read_common(req, out);
    const bool logprobs = !field(req, "logprobs").is_null() && json_bool(req["logprobs"], "logprobs");
    if (!field(req, "top_logprobs").is_null()) {
      check(logprobs, "top_logprobs", "needs \"logprobs\": true");
      out.logprobs = static_cast<int>(json_integer(req["top_logprobs"], "top_logprobs", 0, kMaxTopLogprobs));
    } else if (logprobs) {
      out.logprobs = 0;
    }
    check(req.contains("messages"), "messages", "is required");
    out.prompts = {chat_prompt(tok, parse_chat_messages(req["messages"]))};
    json limit = field(req, "max_completion_tokens");
    const json& legacy = field(req, "max_tokens");
    if (limit.is_null()) {
      limit = legacy;
    } else {
      check(legacy.is_null() || legacy == limit, "max_tokens", "differs from max_completion_tokens");
    }
    set_max_tokens(limit, 1, -1, limits, out);
  });
}

}  // namespace fsvd
