#include "server/openai_responses.h"

#include "tokenizer/token_piece.h"

namespace fsvd {

using nlohmann::json;

const char* finish_reason(const std::string& stop_reason) {
  if (stop_reason == "eos" || stop_reason == "stop_string") return "stop";
  if (stop_reason == "cancelled") return "abort";
  return "length";
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

static json header_json(const ResponseHeader& h, bool chunk) {
  const char* object = h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

json response_body(const ResponseHeader& h, const std::vector<Choice>& choices, const Usage& usage) {
  json body = header_json(h, false);
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const Choice& c = choices[i];
    json choice = {{"index", i}, {"logprobs", c.logprobs}, {"finish_reason", c.finish_reason}};
    if (h.chat)
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    else
      choice["text"] = c.text;
    list.push_back(std::move(choice));
  }
  body["choices"] = std::move(list);
  body["usage"] = usage_json(usage);
  return body;
}

json stream_chunk(const ResponseHeader& h, int index, std::string_view text, bool first, const json& logprobs,
                  const char* finish, bool usage_field) {
  json chunk = header_json(h, true);
  json choice = {{"index", index}, {"logprobs", logprobs}, {"finish_reason", finish ? json(finish) : json()}};
  if (h.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
  }
  chunk["choices"] = json::array({std::move(choice)});
  if (usage_field) chunk["usage"] = nullptr;
  return chunk;
}

json usage_chunk(const ResponseHeader& h, const Usage& usage) {
  json chunk = header_json(h, true);
  chunk["choices"] = json::array();
  chunk["usage"] = usage_json(usage);
  return chunk;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& chunk) { return "data: " + dump_json(chunk) + "\n\n"; }

json error_body(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json() : json(param)},
            {"code", code.empty() ? json() : json(code)}}}};
}

LogprobsWriter::LogprobsWriter(const Tokenizer& tok, bool chat, std::span<const int32_t> context)
    : tok_(tok), chat_(chat), before_(context.begin(), context.end()), pending_(empty()) {}

json LogprobsWriter::empty() const {
  if (chat_) return {{"content", json::array()}};
  return {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
          {"text_offset", json::array()}};
}

std::string LogprobsWriter::piece(int32_t token) const { return token_piece(tok_, before_, token); }

static json bytes_of(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(c);
  return out;
}

static int64_t characters(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void LogprobsWriter::add_entry(int32_t token, const json& logprob, const json& top) {
  const std::string text = piece(token);
  if (chat_) {
    pending_["content"].push_back({{"token", text}, {"logprob", logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}});
  } else {
    pending_["tokens"].push_back(text);
    pending_["token_logprobs"].push_back(logprob);
    pending_["top_logprobs"].push_back(top);
    pending_["text_offset"].push_back(text_offset_);
    text_offset_ += characters(text);
  }
  before_.push_back(token);
}

void LogprobsWriter::add_unscored(int32_t token) { add_entry(token, nullptr, nullptr); }

void LogprobsWriter::add(const TokenLogprobs& lp) {
  json top = chat_ ? json::array() : json::object();
  for (const TokenLogprob& alt : lp.top) {
    const std::string text = piece(alt.token);
    if (chat_)
      top.push_back({{"token", text}, {"logprob", alt.logprob}, {"bytes", bytes_of(text)}});
    else if (!top.contains(text))
      top[text] = alt.logprob;
  }
  add_entry(lp.chosen.token, lp.chosen.logprob, top);
}

json LogprobsWriter::take() {
  json out = std::move(pending_);
  pending_ = empty();
  return out;
}

}  // namespace fsvd
