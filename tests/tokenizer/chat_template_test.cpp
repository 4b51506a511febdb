#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

// Prompts rendered by Jinja2 from the real templates (make_chat_fixture.py).
TEST(ChatTemplate, MatchesJinjaRendering) {
  const auto fx = testing::read_json(testing::fixture("tokenizer/chat_templates.json"));
  ASSERT_GE(fx["cases"].size(), 15u);
  for (const auto& c : fx["cases"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    const std::string source = fx["templates"][c["style"].get<std::string>()];
    EXPECT_EQ(apply_chat_template(source, messages, c["add_generation_prompt"].get<bool>()),
              c["text"].get<std::string>())
        << c["style"] << " " << c["messages"].dump();
  }
}

TEST(ChatTemplate, ChatMlWithoutDefaultSystemPrompt) {
  const std::string plain =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}";
  EXPECT_EQ(apply_chat_template(plain, {{"user", "hi"}}, true),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  // Escaped "\n" inside a Jinja string literal is a newline in the default system prompt.
  const std::string escaped =
      "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nBe kind.\\nAlways.<|im_end|>\\n' }}"
      "{% endif %}" + plain;
  EXPECT_EQ(apply_chat_template(escaped, {{"user", "hi"}}, false),
            "<|im_start|>system\nBe kind.\nAlways.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatTemplate, ClearErrors) {
  EXPECT_THROW(apply_chat_template("", {{"user", "hi"}}, true), Error);
  EXPECT_THROW(apply_chat_template("{{ messages[0]['content'] }}", {{"user", "hi"}}, true), Error);
  EXPECT_THROW(apply_chat_template("[INST]", {{"assistant", "hi"}}, false), Error);  // must start with user
  EXPECT_THROW(apply_chat_template("[INST]", {{"user", "a"}, {"user", "b"}}, false), Error);
}

}  // namespace
}  // namespace fsvd
