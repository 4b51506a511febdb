#include "tokenizer/chat_template.h"

#include "core/error.h"

namespace fsvd {
namespace {

constexpr const char* kWhere = "chat template";

// Python's str.strip() on ASCII whitespace, as the templates' trim / strip().
std::string strip(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The system prompt a ChatML template writes as a literal
// ('<|im_start|>system\n...<|im_end|>') for conversations without one; "" if none.
std::string default_system_prompt(const std::string& source) {
  const std::string open = "<|im_start|>system";
  for (size_t at = source.find(open); at != std::string::npos; at = source.find(open, at + 1)) {
    size_t body = at + open.size();
    if (source.compare(body, 1, "\n") == 0) {
      body += 1;
    } else if (source.compare(body, 2, "\\n") == 0) {
      body += 2;
    } else {
      continue;
    }
    const size_t end = source.find("<|im_end|>", body);
    if (end == std::string::npos) continue;
    std::string text = source.substr(body, end - body);
    // A quote, brace or '+' means the body is built from variables, not written out.
    if (text.empty() || text.find_first_of("'\"{}+") != std::string::npos) continue;
    for (size_t nl = text.find("\\n"); nl != std::string::npos; nl = text.find("\\n", nl + 1))
      text.replace(nl, 2, "\n");
    return text;
  }
  return {};
}

std::string chatml(const std::string& source, const std::vector<ChatMessage>& messages, bool generation_prompt) {
  std::string out;
  auto turn = [&](const std::string& role, const std::string& content) {
    out += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
  };
  if (messages.empty() || messages[0].role != "system") {
    if (const std::string system = default_system_prompt(source); !system.empty()) turn("system", system);
  }
  for (const ChatMessage& m : messages) turn(m.role, m.content);
  if (generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string llama3(const std::vector<ChatMessage>& messages, bool generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages)
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + strip(m.content) + "<|eot_id|>";
  if (generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Meta's Llama-2 chat format: the system prompt folds into the first user turn,
// every later user turn opens with BOS, every assistant turn closes with EOS.
// There is no generation prompt: the text after "[/INST]" is the answer.
std::string llama2(const std::vector<ChatMessage>& messages) {
  size_t first = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    first = 1;
  }
  std::string out;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool user_turn = (i - first) % 2 == 0;
    check(m.role == (user_turn ? "user" : "assistant"), kWhere, "Llama-2 conversations must alternate user/assistant",
          " (message ", i, " has role '", m.role, "')");
    std::string content = m.content;
    if (i == first && first == 1) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
    if (user_turn) {
      out += (i == first ? "" : "<s>") + std::string("[INST] ") + strip(content) + " [/INST]";
    } else {
      out += " " + strip(content) + " </s>";
    }
  }
  return out;
}

}  // namespace

std::string apply_chat_template(const std::string& source, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  check(!source.empty(), kWhere, "the model has no chat template");
  if (source.find("<|im_start|>") != std::string::npos) return chatml(source, messages, add_generation_prompt);
  if (source.find("<|start_header_id|>") != std::string::npos) return llama3(messages, add_generation_prompt);
  if (source.find("[INST]") != std::string::npos) return llama2(messages);
  fail(kWhere, "unrecognised chat template (supported: ChatML <|im_start|>, Llama-3 <|start_header_id|>, ",
       "Llama-2 [INST]): ", source.substr(0, 120));
}

std::string apply_chat_template(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  return apply_chat_template(tokenizer.chat_template(), messages, add_generation_prompt);
}

}  // namespace fsvd
