#include "server/embedding_requests.h"

#include "server/json_params.h"

namespace fsvd {
namespace {

using nlohmann::json;

EncoderInput text_input(const json& v, const EncoderTokenizer& tok, const EncoderLimits& limits) {
  const std::string text = json_text(v, "input");
  check(!text.empty(), "input", "must not be an empty string");
  return tok.encode(text, std::nullopt, limits.max_tokens);
}

EncoderInput id_input(const json& ids, const EncoderLimits& limits) {
  check(ids.is_array() && !ids.empty(), "input", "each input must be a non-empty string or a non-empty list of "
        "token ids");
  check(ids.size() <= static_cast<size_t>(limits.max_tokens), "input", "an input of ", ids.size(),
        " token ids; the model takes at most ", limits.max_tokens, " (token ids are not truncated)");
  EncoderInput in;
  for (const json& t : ids) in.ids.push_back(static_cast<int32_t>(json_integer(t, "input", 0, limits.vocab - 1)));
  in.type_ids.assign(in.ids.size(), 0);
  return in;
}

std::vector<EncoderInput> inputs(const json& v, const EncoderTokenizer& tok, const EncoderLimits& limits) {
  if (v.is_string()) return {text_input(v, tok, limits)};
  check(v.is_array() && !v.empty(), "input", "must be a string, a list of strings, a list of token ids or a list "
        "of such lists, and not empty");
  if (v[0].is_number()) return {id_input(v, limits)};
  check(v.size() <= kMaxEmbeddingInputs, "input", "at most ", kMaxEmbeddingInputs, " inputs in one request, got ",
        v.size());
  std::vector<EncoderInput> out;
  out.reserve(v.size());
  for (const json& item : v) out.push_back(item.is_string() ? text_input(item, tok, limits) : id_input(item, limits));
  return out;
}

}  // namespace

int64_t EmbeddingRequest::tokens() const {
  int64_t n = 0;
  for (const EncoderInput& in : inputs) n += static_cast<int64_t>(in.ids.size());
  return n;
}

EmbeddingRequest parse_embedding_request(std::string_view body, const EncoderTokenizer& tok,
                                         const EncoderLimits& limits) {
  EmbeddingRequest out;
  read_request_body(body, [&](const json& req) {
    check_known_fields(req, {"model", "input", "encoding_format", "dimensions", "user"});
    auto given = [&](const char* name) { return req.contains(name) && !req[name].is_null(); };
    if (given("model")) out.model = json_text(req["model"], "model");
    if (given("user")) json_text(req["user"], "user");
    if (given("encoding_format")) {
      const std::string format = json_text(req["encoding_format"], "encoding_format");
      check(format == "float" || format == "base64", "encoding_format", "must be \"float\" or \"base64\", got \"",
            format, "\"");
      out.base64 = format == "base64";
    }
    if (given("dimensions")) {
      const int64_t d = json_integer(req["dimensions"], "dimensions", 1, kMaxTokensLimit);
      check(d == limits.dimensions, "dimensions", "this model's embeddings have ", limits.dimensions,
            " dimensions, and other sizes are not supported (got ", d, ")");
    }
    check(given("input"), "input", "is required");
    out.inputs = inputs(req["input"], tok, limits);
  });
  return out;
}

}  // namespace fsvd
