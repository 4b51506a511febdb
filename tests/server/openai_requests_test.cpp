#include "server/openai_requests.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/byte_tokenizer.h"

namespace fsvd {
namespace {

const testing::ByteTokenizer kTok;
const ModelLimits kLimits{128, 258};

CompletionRequest completion(const std::string& body) { return parse_completion_request(body, kTok, kLimits); }
CompletionRequest chat(const std::string& body) { return parse_chat_request(body, kTok, kLimits); }

// The ApiError a body gets: its status and param.
std::pair<int, std::string> refusal(const std::string& body, bool is_chat) {
  try {
    is_chat ? chat(body) : completion(body);
  } catch (const ApiError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return {e.status, e.param};
  }
  ADD_FAILURE() << "accepted: " << body;
  return {0, ""};
}

TEST(OpenaiRequests, CompletionsTakeEveryParameter) {
  const CompletionRequest r = completion(
      R"({"model": "m", "prompt": "ab", "max_tokens": 5, "temperature": 0.5, "top_p": 0.5, "top_k": 3, "seed": 7,
          "stop": ["x", "yz"], "stream": true, "stream_options": {"include_usage": true}, "logprobs": 2,
          "echo": true, "n": 1, "presence_penalty": 0, "frequency_penalty": 0.0, "user": "u", "logit_bias": {},
          "ignore_eos": true, "best_of": 1})");
  EXPECT_FALSE(r.chat);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0], (std::vector<int32_t>{256, 'a', 'b'}));
  EXPECT_EQ(r.options.max_new_tokens, 5);
  EXPECT_EQ(r.options.sampling, (SamplingParams{0.5f, 3, 0.5f, 7}));
  EXPECT_EQ(r.options.stop_strings, (std::vector<std::string>{"x", "yz"}));
  EXPECT_TRUE(r.options.ignore_eos);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_TRUE(r.echo);
}

TEST(OpenaiRequests, CompletionPromptsComeAsTextTokensOrListsOfEither) {
  EXPECT_EQ(completion(R"({"prompt": [5, 6]})").prompts, (std::vector<std::vector<int32_t>>{{5, 6}}));
  EXPECT_EQ(completion(R"({"prompt": [[5], [6, 7]]})").prompts, (std::vector<std::vector<int32_t>>{{5}, {6, 7}}));
  EXPECT_EQ(completion(R"({"prompt": ["a", [9]]})").prompts, (std::vector<std::vector<int32_t>>{{256, 'a'}, {9}}));
  EXPECT_EQ(completion(R"({"prompt": ""})").prompts, (std::vector<std::vector<int32_t>>{{256}}));
  std::string many = "[1";  // more ids than prompts a request may hold
  for (int i = 0; i < 127 + 10; ++i) many += ", 2";
  EXPECT_EQ(parse_completion_request(R"({"prompt": )" + many + "]}", kTok, {1024, 258}).prompts[0].size(), 138u);
  std::string lists = "[[1]";
  for (int i = 0; i < 128; ++i) lists += ", [2]";
  EXPECT_EQ(refusal(R"({"prompt": )" + lists + "]}", false).second, "prompt");
  const CompletionRequest d = completion(R"({"prompt": "a"})");
  EXPECT_EQ(d.options.max_new_tokens, 16);  // OpenAI's default
  EXPECT_EQ(d.logprobs, -1);
  EXPECT_FALSE(d.stream);
}

TEST(OpenaiRequests, ChatUsesTheTemplateAndTheRestOfTheContextByDefault) {
  const CompletionRequest r = chat(
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "bob"}],
          "logprobs": true, "top_logprobs": 3})");
  EXPECT_TRUE(r.chat);
  ASSERT_EQ(r.prompts.size(), 1u);
  const std::string text = kTok.decode(r.prompts[0]);
  EXPECT_NE(text.find("hi"), std::string::npos);
  EXPECT_EQ(r.options.max_new_tokens, kLimits.context - static_cast<int>(r.prompts[0].size()));
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})").logprobs, 0);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 4})").options.max_new_tokens,
            4);
}

TEST(OpenaiRequests, RefusesWhatItCannotDoWithTheFieldNamed) {
  const std::vector<std::tuple<std::string, bool, int, std::string>> cases = {
      {R"({)", false, 400, ""},
      {R"([])", false, 400, ""},
      {R"("x")", false, 400, ""},
      {R"()", false, 400, ""},
      {R"({"prompt": "a", "temperature": "hot"})", false, 400, "temperature"},
      {R"({"prompt": "a", "temperature": -1})", false, 400, "temperature"},
      {R"({"prompt": "a", "temperature": 1e309})", false, 400, ""},  // not valid JSON
      {R"({"prompt": "a", "temperature": 2.5})", false, 400, "temperature"},
      {R"({"prompt": "a", "top_p": 0})", false, 400, "top_p"},
      {R"({"prompt": "a", "top_k": -5})", false, 400, "top_k"},
      {R"({"prompt": "a", "max_tokens": 1000000})", false, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": -1})", false, 400, "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 1.5})", false, 400, "max_tokens"},
      {R"({"prompt": "a", "seed": 18446744073709551616})", false, 400, "seed"},
      {R"({"prompt": "a", "seed": -1})", false, 400, "seed"},
      {R"({"prompt": []})", false, 400, "prompt"},
      {R"({"prompt": [999999]})", false, 400, "prompt"},
      {R"({"prompt": [[]]})", false, 400, "prompt"},
      {R"({"prompt": [1.5]})", false, 400, "prompt"},
      {R"({"prompt": {"a": 1}})", false, 400, "prompt"},
      {R"({"max_tokens": 3})", false, 400, "prompt"},
      {R"({"prompt": ")" + std::string(200, 'a') + R"("})", false, 400, "prompt"},
      {R"({"prompt": "a", "n": 2})", false, 400, "n"},
      {R"({"prompt": "a", "best_of": 3})", false, 400, "best_of"},
      {R"({"prompt": "a", "presence_penalty": 0.5})", false, 400, "presence_penalty"},
      {R"({"prompt": "a", "frequency_penalty": -1})", false, 400, "frequency_penalty"},
      {R"({"prompt": "a", "logit_bias": {"5": 1}})", false, 400, "logit_bias"},
      {R"({"prompt": "a", "suffix": "x"})", false, 400, "suffix"},
      {R"({"prompt": "a", "stop": ["a", "b", "c", "d", "e"]})", false, 400, "stop"},
      {R"({"prompt": "a", "stop": ""})", false, 400, "stop"},
      {R"({"prompt": "a", "stop": [3]})", false, 400, "stop"},
      {R"({"prompt": "a", "frobnicate": true})", false, 400, "frobnicate"},
      {R"({"prompt": "a", "stream": "yes"})", false, 400, "stream"},
      {R"({"prompt": "a", "stream_options": {"include_usage": true}})", false, 400, "stream_options"},
      {R"({"prompt": "a", "stream": true, "stream_options": {"x": 1}})", false, 400, "x"},
      {R"({"prompt": "a", "logprobs": 21})", false, 400, "logprobs"},
      {R"({"prompt": "a", "echo": 1})", false, 400, "echo"},
      {R"({"prompt": "a", "model": 5})", false, 400, "model"},
      {"{\"prompt\": \"\xff\xfe\"}", false, 400, ""},
      {R"({"prompt": "\ud800"})", false, 400, ""},
      {R"({"messages": []})", true, 400, "messages"},
      {R"({"messages": "hi"})", true, 400, "messages"},
      {R"({})", true, 400, "messages"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", true, 400, "role"},
      {R"({"messages": [{"role": "user"}]})", true, 400, "messages"},
      {R"({"messages": [{"role": "user", "content": {"a": {"b": 1}}}]})", true, 400, "content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true, 400, "content"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", true, 400, "tool_calls"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", true, 400, "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "max_completion_tokens": 3})", true, 400,
       "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true, 400, "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": []})", true, 400, "tools"},
      {R"({"messages": [{"role": "user", "content": ")" + std::string(200, 'a') + R"("}]})", true, 400, "messages"},
  };
  for (const auto& [body, is_chat, status, param] : cases) {
    const auto [got_status, got_param] = refusal(body, is_chat);
    EXPECT_EQ(got_status, status) << body;
    EXPECT_EQ(got_param, param) << body;
  }
}

TEST(OpenaiRequests, ThePromptAndTheTokensAskedForMustFitTheContext) {
  const std::string fits(40, 'a');  // 41 tokens with BOS
  EXPECT_EQ(completion(R"({"prompt": ")" + fits + R"(", "max_tokens": 87})").options.max_new_tokens, 87);
  EXPECT_EQ(refusal(R"({"prompt": ")" + fits + R"(", "max_tokens": 88})", false).second, "max_tokens");
  // The whole context echoed, nothing generated: what log-likelihood scoring asks.
  const std::string full(127, 'a');
  const CompletionRequest r = completion(R"({"prompt": ")" + full + R"(", "max_tokens": 0, "echo": true})");
  EXPECT_EQ(r.options.max_new_tokens, 0);
  EXPECT_EQ(refusal(R"({"prompt": ")" + full + R"(", "max_tokens": 0})", false).second, "prompt");
  EXPECT_EQ(refusal(R"({"prompt": ")" + full + R"(a", "max_tokens": 0, "echo": true})", false).second, "prompt");
}

}  // namespace
}  // namespace fsvd
