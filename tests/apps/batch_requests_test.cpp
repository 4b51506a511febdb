#include "apps/batch_requests.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "testing/byte_tokenizer.h"

namespace fsvd {
namespace {

using nlohmann::json;

BatchRequest parse(const std::string& line, GenerateOptions defaults = {}) {
  static const testing::ByteTokenizer tok;
  return parse_batch_request(line, tok, defaults);
}

TEST(BatchRequests, ReadsEveryParameterAndKeepsDefaultsForTheRest) {
  GenerateOptions defaults;
  defaults.max_new_tokens = 9;
  defaults.stop_strings = {"zz"};
  const BatchRequest a = parse(R"({"prompt": "ab", "id": [1, "x"]})", defaults);
  EXPECT_EQ(a.prompt, (std::vector<int32_t>{256, 'a', 'b'}));
  EXPECT_EQ(a.id, json::parse(R"([1, "x"])"));
  EXPECT_EQ(a.options.max_new_tokens, 9);
  EXPECT_EQ(a.options.stop_strings, std::vector<std::string>{"zz"});
  EXPECT_EQ(a.options.sampling, SamplingParams{});

  const BatchRequest b = parse(
      R"({"prompt": "a", "max_tokens": 3, "temperature": 0.5, "top_p": 0.25, "top_k": 7, "seed": 18446744073, "stop": ["x", "y"]})");
  EXPECT_EQ(b.options.max_new_tokens, 3);
  EXPECT_EQ(b.options.sampling, (SamplingParams{0.5f, 7, 0.25f, 18446744073ull}));
  EXPECT_EQ(b.options.stop_strings, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(parse(R"({"prompt": "a", "stop": "q"})").options.stop_strings, std::vector<std::string>{"q"});
  EXPECT_TRUE(parse(R"({"prompt": "a", "stop": null})", defaults).options.stop_strings.empty());
  EXPECT_TRUE(parse(R"({"prompt": "a"})").id.is_null());
}

TEST(BatchRequests, EmptyPromptStartsFromBosAndMessagesUseTheChatTemplate) {
  EXPECT_EQ(parse(R"({"prompt": ""})").prompt, std::vector<int32_t>{256});
  const BatchRequest chat = parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  const testing::ByteTokenizer tok;
  EXPECT_EQ(tok.decode(chat.prompt), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(BatchRequests, MalformedRequestsAreRefusedWithTheFieldNamed) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "JSON"},
      {"{", "JSON"},
      {"not json", "JSON"},
      {R"({"prompt": "a"} trailing)", "JSON"},
      {"[1, 2]", "object"},
      {"\"text\"", "object"},
      {"null", "object"},
      {"{}", "exactly one"},
      {R"({"prompt": "a", "messages": []})", "exactly one"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"prompt": null})", "prompt"},
      {R"({"prompt": ["a"]})", "prompt"},
      {R"({"prompt": "a", "max_tokens": -1})", "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 1000000000})", "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 2.5})", "max_tokens"},
      {R"({"prompt": "a", "max_tokens": "5"})", "max_tokens"},
      {R"({"prompt": "a", "max_tokens": 1e400})", "JSON"},
      {R"({"prompt": "a", "temperature": -0.1})", "temperature"},
      {R"({"prompt": "a", "temperature": 1000})", "temperature"},
      {R"({"prompt": "a", "temperature": "hot"})", "temperature"},
      {R"({"prompt": "a", "top_p": 0})", "top_p"},
      {R"({"prompt": "a", "top_p": 1.5})", "top_p"},
      {R"({"prompt": "a", "top_k": -3})", "top_k"},
      {R"({"prompt": "a", "seed": -1})", "seed"},
      {R"({"prompt": "a", "seed": 99999999999999999999})", "seed"},
      {R"({"prompt": "a", "stop": ""})", "stop"},
      {R"({"prompt": "a", "stop": [""]})", "stop"},
      {R"({"prompt": "a", "stop": [1]})", "stop"},
      {R"({"prompt": "a", "stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})", "stop"},
      {R"({"prompt": "a", "presence_penalty": 0.5})", "presence_penalty"},
      {R"({"prompt": "a", "n": 2})", "\"n\""},
      {R"({"messages": []})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": [1]})", "messages"},
      {R"({"messages": [{"role": "user"}]})", "content"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "role"},
      {R"({"messages": [{"role": "user", "content": 3}]})", "content"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "tool_calls"},
      {std::string(100000, '['), "JSON"},
  };
  for (const auto& [line, named] : bad) {
    try {
      parse(line);
      ADD_FAILURE() << "accepted: " << line.substr(0, 80);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << line.substr(0, 80) << " -> " << e.what();
    }
  }
}

TEST(BatchRequests, ResultsCarryOpenAiFinishReasons) {
  RequestResult r;
  r.prompt_tokens = 4;
  r.tokens = {1, 2};
  r.stop_reason = "stop_string";
  const json j = batch_result(3, "q", "hi", {7, 8, 9, 10}, r);
  EXPECT_EQ(j["index"], 3);
  EXPECT_EQ(j["id"], "q");
  EXPECT_EQ(j["text"], "hi");
  EXPECT_EQ(j["completion_tokens"], 2);
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["prompt_token_ids"], json::array({7, 8, 9, 10}));
  EXPECT_EQ(j["token_ids"], json::array({1, 2}));
  r.first_token_seconds = 0.25;
  EXPECT_EQ(batch_result(3, "q", "hi", {7}, r)["first_token_s"], 0.25);
  EXPECT_EQ(batch_error(1, nullptr, "bad")["error"]["message"], "bad");
}

}  // namespace
}  // namespace fsvd
