#include "apps/batch_requests.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "tokenizer/chat_template.h"

namespace fsvd {
namespace {

using nlohmann::json;

constexpr int64_t kMaxTokensLimit = 1 << 24;
constexpr size_t kMaxStops = 16;

double number(const json& v, const char* name, double lo, double hi) {
  check(v.is_number(), name, "must be a number, got ", v.type_name());
  const double x = v.get<double>();
  check(std::isfinite(x) && x >= lo && x <= hi, name, "must be in [", lo, ", ", hi, "], got ", x);
  return x;
}

int64_t integer(const json& v, const char* name, int64_t lo, int64_t hi) {
  check(v.is_number_integer(), name, "must be an integer, got ", v.dump());
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    check(u <= static_cast<uint64_t>(hi), name, "must be at most ", hi, ", got ", u);
    return static_cast<int64_t>(u);
  }
  const int64_t x = v.get<int64_t>();
  check(x >= lo && x <= hi, name, "must be in [", lo, ", ", hi, "], got ", x);
  return x;
}

std::string text(const json& v, const char* name) {
  check(v.is_string(), name, "must be a string, got ", v.type_name());
  return v.get<std::string>();
}

std::vector<int32_t> prompt_tokens(const json& req, const Tokenizer& tok) {
  const bool has_prompt = req.contains("prompt"), has_messages = req.contains("messages");
  check(has_prompt != has_messages, "request", "needs exactly one of \"prompt\" and \"messages\"");
  if (has_prompt) {
    const std::string prompt = text(req["prompt"], "prompt");
    if (!prompt.empty()) return tok.encode(prompt, tok.adds_bos());
    check(tok.bos_id() >= 0, "prompt", "empty, and this tokenizer has no BOS token to start from");
    return {tok.bos_id()};
  }
  const json& list = req["messages"];
  check(list.is_array() && !list.empty(), "messages", "must be a non-empty list");
  std::vector<ChatMessage> messages;
  for (const json& m : list) {
    check(m.is_object(), "messages", "each message must be an object");
    for (const auto& [key, value] : m.items())
      check(key == "role" || key == "content", "messages", "unknown field \"", key, "\"");
    check(m.contains("role") && m.contains("content"), "messages", "each message needs \"role\" and \"content\"");
    const std::string role = text(m["role"], "role");
    check(role == "system" || role == "user" || role == "assistant", "role", "must be system, user or assistant, got \"",
          role, "\"");
    messages.push_back({role, text(m["content"], "content")});
  }
  return tok.encode(apply_chat_template(tok, messages, true), tok.adds_bos(), true);
}

}  // namespace

BatchRequest parse_batch_request(std::string_view line, const Tokenizer& tok, const GenerateOptions& defaults) {
  json req;
  try {
    req = json::parse(line);
  } catch (const json::exception& e) {
    fail("request", "not valid JSON (", e.what(), ")");
  }
  check(req.is_object(), "request", "must be a JSON object, got ", req.type_name());
  static const char* const kKnown[] = {"id",    "prompt", "messages", "max_tokens", "temperature",
                                       "top_p", "top_k",  "seed",     "stop"};
  for (const auto& [key, value] : req.items()) {
    bool known = false;
    for (const char* k : kKnown) known |= key == k;
    check(known, "request", "unknown field \"", key, "\"");
  }
  BatchRequest out;
  if (req.contains("id")) out.id = req["id"];
  out.options = defaults;
  if (req.contains("max_tokens"))
    out.options.max_new_tokens = static_cast<int>(integer(req["max_tokens"], "max_tokens", 0, kMaxTokensLimit));
  SamplingParams& s = out.options.sampling;
  if (req.contains("temperature")) s.temperature = static_cast<float>(number(req["temperature"], "temperature", 0, 100));
  if (req.contains("top_p")) {
    s.top_p = static_cast<float>(number(req["top_p"], "top_p", 0, 1));
    check(s.top_p > 0, "top_p", "must be above 0");
  }
  if (req.contains("top_k")) s.top_k = static_cast<int>(integer(req["top_k"], "top_k", 0, kMaxTokensLimit));
  if (req.contains("seed"))
    s.seed = static_cast<uint64_t>(integer(req["seed"], "seed", 0, std::numeric_limits<int64_t>::max()));
  if (req.contains("stop")) {
    const json& stop = req["stop"];
    out.options.stop_strings.clear();
    if (stop.is_array()) {
      check(stop.size() <= kMaxStops, "stop", "at most ", kMaxStops, " strings");
      for (const json& v : stop) out.options.stop_strings.push_back(text(v, "stop"));
    } else if (!stop.is_null()) {
      out.options.stop_strings.push_back(text(stop, "stop"));
    }
    for (const std::string& st : out.options.stop_strings) check(!st.empty(), "stop", "empty stop string");
  }
  out.prompt = prompt_tokens(req, tok);
  return out;
}

const char* finish_reason(const std::string& stop_reason) {
  return stop_reason == "eos" || stop_reason == "stop_string" ? "stop" : "length";
}

nlohmann::json batch_result(size_t index, const nlohmann::json& id, const std::string& text,
                            const RequestResult& result) {
  return {{"index", index},
          {"id", id},
          {"text", text},
          {"prompt_tokens", result.prompt_tokens},
          {"completion_tokens", result.tokens.size()},
          {"finish_reason", finish_reason(result.stop_reason)},
          {"queue_s", result.queue_seconds},
          {"first_token_s", result.first_token_seconds},
          {"total_s", result.total_seconds}};
}

nlohmann::json batch_error(size_t index, const nlohmann::json& id, const std::string& message) {
  return {{"index", index}, {"id", id}, {"error", {{"message", message}}}};
}

}  // namespace fsvd
