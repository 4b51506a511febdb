#include "server/embedding_responses.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

std::string encode(const std::string& s) {
  return base64_encode({reinterpret_cast<const unsigned char*>(s.data()), s.size()});
}

// What a client does with encoding_format "base64": decode, read little-endian fp32.
std::vector<float> decode_floats(const std::string& b64) {
  auto digit = [](char c) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : 63;
  };
  std::vector<unsigned char> bytes;
  for (size_t i = 0; i + 4 <= b64.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      pad += b64[i + k] == '=';
      v = v << 6 | (b64[i + k] == '=' ? 0 : digit(b64[i + k]));
    }
    for (int k = 0; k < 3 - pad; ++k) bytes.push_back(static_cast<unsigned char>(v >> (16 - 8 * k)));
  }
  EXPECT_EQ(bytes.size() % 4, 0u);
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t bits = bytes[4 * i] | bytes[4 * i + 1] << 8 | bytes[4 * i + 2] << 16 | uint32_t{bytes[4 * i + 3]} << 24;
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

const std::vector<float> kValues = {0.0f,    -0.0f,   1.0f,     -1.0f,   0.1f,        -0.333333343f, 1e-30f,
                                    FLT_MIN, FLT_MAX, -FLT_MAX, 1.4e-45f, 0.99999994f, 123456.789f, 3.0e-8f};

TEST(EmbeddingResponses, Base64IsRfc4648) {
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foob"), "Zm9vYg==");
  EXPECT_EQ(encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(encode(std::string("\xff\xfe\x00\x3e\x3f", 5)), "//4APj8=");
  EXPECT_EQ(base64_floats(std::vector<float>{1.0f}), "AACAPw==");  // 0x3F800000, little-endian
}

TEST(EmbeddingResponses, FloatsRoundTripExactly) {
  const nlohmann::json j = nlohmann::json::parse(embedding_response("m", kValues, 7, false, 5));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["usage"], (nlohmann::json{{"prompt_tokens", 5}, {"total_tokens", 5}}));
  ASSERT_EQ(j["data"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& e = j["data"][i];
    EXPECT_EQ(e["object"], "embedding");
    EXPECT_EQ(e["index"], i);
    ASSERT_EQ(e["embedding"].size(), 7u);
    for (size_t k = 0; k < 7; ++k) {
      const float got = static_cast<float>(e["embedding"][k].get<double>());
      EXPECT_EQ(std::memcmp(&got, &kValues[i * 7 + k], 4), 0) << got << " vs " << kValues[i * 7 + k];
    }
  }
}

TEST(EmbeddingResponses, Base64RoundTripsExactly) {
  const nlohmann::json j = nlohmann::json::parse(embedding_response("m", kValues, 7, true, 5));
  ASSERT_EQ(j["data"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<float> got = decode_floats(j["data"][i]["embedding"].get<std::string>());
    ASSERT_EQ(got.size(), 7u);
    EXPECT_EQ(std::memcmp(got.data(), &kValues[i * 7], 7 * 4), 0);
  }
}

TEST(EmbeddingResponses, FloatsAreShortAndNonFiniteValuesNull) {
  const std::string body = embedding_response("m\"", std::vector<float>{0.1f, NAN, INFINITY}, 3, false, 1);
  EXPECT_NE(body.find("[0.1,null,null]"), std::string::npos) << body;
  EXPECT_EQ(nlohmann::json::parse(body)["model"], "m\"");
  EXPECT_THROW(embedding_response("m", std::vector<float>{1, 2, 3}, 2, false, 1), Error);
}

}  // namespace
}  // namespace fsvd
