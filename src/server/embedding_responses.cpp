#include "server/embedding_responses.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/openai_responses.h"

namespace fsvd {

std::string base64_encode(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t triple = uint32_t{bytes[i]} << 16;
    if (n > 1) triple |= uint32_t{bytes[i + 1]} << 8;
    if (n > 2) triple |= bytes[i + 2];
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(triple >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string base64_floats(std::span<const float> values) {
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int k = 0; k < 4; ++k) bytes[4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xFF);  // little-endian
  }
  return base64_encode({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()});
}

static void append_floats(std::string& out, std::span<const float> values) {
  out += '[';
  char buf[32];
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    if (!std::isfinite(values[i])) {  // JSON has no NaN or infinity (nlohmann writes null too)
      out += "null";
      continue;
    }
    if (values[i] == 0 && std::signbit(values[i])) {  // "-0" would read back as the integer 0
      out += "-0.0";
      continue;
    }
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, values[i]);
    check(ec == std::errc(), "embedding_response", "cannot format a float");
    out.append(buf, end);
  }
  out += ']';
}

std::string embedding_response(const std::string& model, std::span<const float> embeddings, int64_t dimensions,
                               bool base64, int64_t prompt_tokens) {
  check(dimensions > 0 && embeddings.size() % dimensions == 0, "embedding_response", embeddings.size(),
        " values are not whole embeddings of ", dimensions);
  // Written by hand: nlohmann would print each fp32 value as a 17-digit double.
  std::string out = R"({"object":"list","data":[)";
  const size_t n = embeddings.size() / dimensions;
  for (size_t i = 0; i < n; ++i) {
    const std::span<const float> e = embeddings.subspan(i * dimensions, dimensions);
    out += i ? "," : "";
    out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)";
    if (base64)
      out += '"' + base64_floats(e) + '"';
    else
      append_floats(out, e);
    out += '}';
  }
  const nlohmann::json usage = {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}};
  out += R"(],"model":)" + dump_json(model) + R"(,"usage":)" + dump_json(usage) + '}';
  return out;
}

}  // namespace fsvd
