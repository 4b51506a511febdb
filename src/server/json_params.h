#pragma once
// Typed reads of JSON request fields, shared by `flashsvd batch` and the
// server. Each throws Error whose where() is the field's name, so callers can
// report which parameter was wrong.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/completion.h"

namespace fsvd {

double json_number(const nlohmann::json& v, const char* name, double lo, double hi);
int64_t json_integer(const nlohmann::json& v, const char* name, int64_t lo, int64_t hi);
std::string json_text(const nlohmann::json& v, const char* name);
bool json_bool(const nlohmann::json& v, const char* name);
// Parses `body` as one JSON object (Error "request" otherwise).
nlohmann::json parse_json_object(std::string_view body);
// Refuses any field of `request` outside `known`.
void check_known_fields(const nlohmann::json& request, std::initializer_list<const char*> known);

// Tokens a request may ask for at most: far beyond any context, small enough
// for int arithmetic.
constexpr int64_t kMaxTokensLimit = 1 << 24;

// The sampling fields OpenAI's APIs share, where present in `request`:
// "temperature" [0, max_temperature], "top_p" (0, 1], "top_k" >= 0, "seed"
// >= 0, "stop" (a string or a list of at most `max_stops` non-empty ones;
// null: none) into `options`.
void read_sampling_fields(const nlohmann::json& request, double max_temperature, size_t max_stops,
                          GenerateOptions& options);

}  // namespace fsvd
