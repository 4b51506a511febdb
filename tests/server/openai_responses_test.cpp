#include "server/openai_responses.h"

#include <gtest/gtest.h>

#include "testing/byte_tokenizer.h"

namespace fsvd {
namespace {

using nlohmann::json;

const testing::ByteTokenizer kTok;

TEST(OpenaiResponses, BodiesFollowOpenAIsShapes) {
  const ResponseHeader h{false, "cmpl-1", 1700000000, "m"};
  const json body = response_body(h, {{"hi", "stop", nullptr}, {"yo", "length", nullptr}}, {5, 3});
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][1]["index"], 1);
  EXPECT_EQ(body["choices"][1]["text"], "yo");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"], json::parse(R"({"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8})"));

  const ResponseHeader c{true, "chatcmpl-1", 1, "m"};
  const json chat = response_body(c, {{"hi", "length", nullptr}}, {1, 1});
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"], json::parse(R"({"role": "assistant", "content": "hi"})"));
}

TEST(OpenaiResponses, ChunksNameTheRoleFirstAndTheFinishLast) {
  const ResponseHeader c{true, "chatcmpl-1", 1, "m"};
  const json first = stream_chunk(c, 0, "", true, nullptr, nullptr, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role": "assistant", "content": ""})"));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  const json last = stream_chunk(c, 0, "", false, nullptr, "stop", false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(last.contains("usage"));
  const json usage = usage_chunk(c, {2, 3});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

TEST(OpenaiResponses, FinishReasons) {
  EXPECT_STREQ(finish_reason("eos"), "stop");
  EXPECT_STREQ(finish_reason("stop_string"), "stop");
  EXPECT_STREQ(finish_reason("length"), "length");
  EXPECT_STREQ(finish_reason("context"), "length");
  EXPECT_STREQ(finish_reason("cancelled"), "abort");
}

TEST(OpenaiResponses, ErrorObjectsAndInvalidUtf8) {
  EXPECT_EQ(error_body("bad", "invalid_request_error", "top_p"),
            json::parse(R"({"error": {"message": "bad", "type": "invalid_request_error", "param": "top_p", "code": null}})"));
  EXPECT_EQ(dump_json(json("a\xff")), "\"a\xEF\xBF\xBD\"");
}

TEST(OpenaiResponses, CompletionLogprobsNameTokensWithOffsets) {
  const std::vector<int32_t> prompt = {256, 'a'};
  LogprobsWriter w(kTok, false, {});
  w.add_unscored(prompt[0]);
  w.add({{'a', -0.5f}, {}});
  w.add({{'b', -1.5f}, {{'c', -0.25f}, {'b', -1.5f}}});
  const json lp = w.take();
  EXPECT_EQ(lp["tokens"], json::parse(R"(["", "a", "b"])"));
  EXPECT_EQ(lp["token_logprobs"][0], nullptr);
  EXPECT_EQ(lp["token_logprobs"][2], -1.5);
  EXPECT_EQ(lp["top_logprobs"][0], nullptr);
  EXPECT_EQ(lp["top_logprobs"][2], json::parse(R"({"c": -0.25, "b": -1.5})"));
  EXPECT_EQ(lp["text_offset"], json::parse("[0, 0, 1]"));
  EXPECT_TRUE(w.take()["tokens"].empty());  // taken
}

TEST(OpenaiResponses, ChatLogprobsCarryBytes) {
  LogprobsWriter w(kTok, true, std::vector<int32_t>{256});
  w.add({{0xC3, -0.1f}, {{0xC3, -0.1f}}});
  const json lp = w.take();
  ASSERT_EQ(lp["content"].size(), 1u);
  EXPECT_EQ(lp["content"][0]["bytes"], json::parse("[195]"));
  EXPECT_EQ(lp["content"][0]["top_logprobs"][0]["logprob"], -0.1f);
}

}  // namespace
}  // namespace fsvd
