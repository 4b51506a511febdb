#include "server/embedding_requests.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/wordpiece_tokenizer.h"

namespace fsvd {
namespace {

// ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, un 5, ##aff 6, ##able 7, hello 8, , 9, ! 10, ##s 11, a 12, ##a 13
const WordPieceTokenizer& tok() {
  static const WordPieceTokenizer t(
      parse_vocab_txt("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\nhello\n,\n!\n##s\na\n##a\n", "v"), {},
      "v");
  return t;
}
const EncoderLimits kLimits{14, 6, 16};

EmbeddingRequest parse(const std::string& body) { return parse_embedding_request(body, tok(), kLimits); }

std::vector<std::vector<int32_t>> ids(const EmbeddingRequest& r) {
  std::vector<std::vector<int32_t>> out;
  for (const EncoderInput& in : r.inputs) {
    EXPECT_EQ(in.type_ids, std::vector<int32_t>(in.ids.size(), 0));
    out.push_back(in.ids);
  }
  return out;
}

// The ApiError a body gets: its status and param.
std::pair<int, std::string> refusal(const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return {e.status, e.param};
  }
  ADD_FAILURE() << "accepted: " << body;
  return {0, ""};
}

TEST(EmbeddingRequests, TakesEveryParameter) {
  const EmbeddingRequest r = parse(
      R"({"model": "m", "input": "hello", "encoding_format": "base64", "dimensions": 16, "user": "u"})");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(ids(r), (std::vector<std::vector<int32_t>>{{2, 8, 3}}));
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.tokens(), 3);
  const EmbeddingRequest d = parse(R"({"input": "hello", "encoding_format": null, "dimensions": null, "user": null})");
  EXPECT_EQ(d.model, "");
  EXPECT_FALSE(d.base64);
  EXPECT_FALSE(parse(R"({"input": "hello", "encoding_format": "float"})").base64);
}

TEST(EmbeddingRequests, InputComesAsTextTokenIdsOrListsOfEither) {
  using Ids = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(ids(parse(R"({"input": ["hello", "unaffable!"]})")), (Ids{{2, 8, 3}, {2, 5, 6, 7, 10, 3}}));
  // Token ids are the whole input, as given: no [CLS] / [SEP] added.
  EXPECT_EQ(ids(parse(R"({"input": [8, 9]})")), (Ids{{8, 9}}));
  EXPECT_EQ(ids(parse(R"({"input": [[8], [2, 8, 3]]})")), (Ids{{8}, {2, 8, 3}}));
  EXPECT_EQ(ids(parse(R"({"input": ["a", [12]]})")), (Ids{{2, 12, 3}, {12}}));
  EXPECT_EQ(ids(parse(R"({"input": [0, 13, 13, 13, 13, 13]})"))[0].size(), 6u);  // exactly max_tokens
  // Whitespace is text: [CLS] [SEP].
  EXPECT_EQ(ids(parse(R"({"input": " "})")), (Ids{{2, 3}}));
}

TEST(EmbeddingRequests, LongTextIsTruncatedLikeEmbed) {
  const EmbeddingRequest r = parse(R"({"input": "hello hello hello hello hello hello hello hello"})");
  EXPECT_EQ(ids(r), (std::vector<std::vector<int32_t>>{{2, 8, 8, 8, 8, 3}}));
  EXPECT_EQ(r.inputs[0].ids, tok().encode("hello hello hello hello hello hello hello hello", std::nullopt, 6).ids);
}

TEST(EmbeddingRequests, UpToTheInputCap) {
  std::string list = "[\"a\"";
  for (size_t i = 1; i < kMaxEmbeddingInputs; ++i) list += ", \"a\"";
  EXPECT_EQ(parse(R"({"input": )" + list + "]}").inputs.size(), kMaxEmbeddingInputs);
  EXPECT_EQ(refusal(R"({"input": )" + list + ", \"a\"]}"), (std::pair<int, std::string>{400, "input"}));
}

TEST(EmbeddingRequests, EveryRefusalNamesItsParameter) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "input"},
      {R"({"input": null})", "input"},
      {R"({"input": ""})", "input"},
      {R"({"input": ["hello", ""]})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": [[]]})", "input"},
      {R"({"input": [[8], []]})", "input"},
      {R"({"input": 5})", "input"},
      {R"({"input": {"text": "a"}})", "input"},
      {R"({"input": [null]})", "input"},
      {R"({"input": [true]})", "input"},
      {R"({"input": [14]})", "input"},
      {R"({"input": [-1]})", "input"},
      {R"({"input": [1.5]})", "input"},
      {R"({"input": [8, "a"]})", "input"},
      {R"({"input": [[8, 99]]})", "input"},
      {R"({"input": [1, 2, 3, 4, 5, 6, 7]})", "input"},  // ids are not truncated
      {R"({"input": [["a"]]})", "input"},
      {R"({"input": "a", "encoding_format": "int8"})", "encoding_format"},
      {R"({"input": "a", "encoding_format": 1})", "encoding_format"},
      {R"({"input": "a", "dimensions": 8})", "dimensions"},
      {R"({"input": "a", "dimensions": 0})", "dimensions"},
      {R"({"input": "a", "dimensions": 16.0})", "dimensions"},
      {R"({"input": "a", "dimensions": "16"})", "dimensions"},
      {R"({"input": "a", "model": 3})", "model"},
      {R"({"input": "a", "user": 3})", "user"},
      {R"({"input": "a", "frobnicate": 1})", "frobnicate"},
      {R"({"input": "a", "prompt": "b"})", "prompt"},
  };
  for (const auto& [body, param] : cases) {
    const auto [status, got] = refusal(body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(got, param) << body;
  }
}

TEST(EmbeddingRequests, BodiesThatAreNotJsonObjectsAre400sWithoutAParam) {
  for (const std::string body : {"", "{", "[]", "\"input\"", "null", "{\"input\": \"a\"} x"})
    EXPECT_EQ(refusal(body), (std::pair<int, std::string>{400, ""})) << body;
}

}  // namespace
}  // namespace fsvd
