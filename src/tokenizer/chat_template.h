#pragma once
// Chat prompts in the formats chat models were trained on. The model's Jinja
// template is not executed: its style is recognised from its source and
// rendered natively. Supported: ChatML (<|im_start|>; a default system prompt
// written in the template, as SmolLM2's, is used when the conversation has
// none), Llama-3 headers (<|start_header_id|>) and Llama-2 [INST].
// The first BOS is never written: encode with add_bos = tokenizer.adds_bos()
// and parse_special = true.
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace fsvd {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// Throws Error for an empty or unrecognised template.
std::string apply_chat_template(const std::string& template_source, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);
// With the tokenizer's own template (Tokenizer::chat_template()).
std::string apply_chat_template(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);

}  // namespace fsvd
