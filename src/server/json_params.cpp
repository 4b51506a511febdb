#include "server/json_params.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace fsvd {

using nlohmann::json;

double json_number(const json& v, const char* name, double lo, double hi) {
  check(v.is_number(), name, "must be a number, got ", v.type_name());
  const double x = v.get<double>();
  check(std::isfinite(x) && x >= lo && x <= hi, name, "must be in [", lo, ", ", hi, "], got ", x);
  return x;
}

int64_t json_integer(const json& v, const char* name, int64_t lo, int64_t hi) {
  check(v.is_number_integer(), name, "must be an integer, got ", v.dump());
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();  // non-negative literals parse as unsigned
    check(u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo, name, "must be in [", lo, ", ", hi,
          "], got ", u);
    return static_cast<int64_t>(u);
  }
  const int64_t x = v.get<int64_t>();
  check(x >= lo && x <= hi, name, "must be in [", lo, ", ", hi, "], got ", x);
  return x;
}

std::string json_text(const json& v, const char* name) {
  check(v.is_string(), name, "must be a string, got ", v.type_name());
  return v.get<std::string>();
}

bool json_bool(const json& v, const char* name) {
  check(v.is_boolean(), name, "must be true or false, got ", v.dump());
  return v.get<bool>();
}

json parse_json_object(std::string_view body) {
  json req;
  try {
    req = json::parse(body);
  } catch (const json::exception& e) {
    fail("request", "not valid JSON (", e.what(), ")");
  }
  check(req.is_object(), "request", "must be a JSON object, got ", req.type_name());
  return req;
}

void check_known_fields(const json& request, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : request.items()) {
    bool ok = false;
    for (const char* k : known) ok |= key == k;
    check(ok, key, "unknown field \"", key, "\"");
  }
}

void read_sampling_fields(const json& req, double max_temperature, size_t max_stops, GenerateOptions& options) {
  SamplingParams& s = options.sampling;
  if (req.contains("temperature"))
    s.temperature = static_cast<float>(json_number(req["temperature"], "temperature", 0, max_temperature));
  if (req.contains("top_p")) {
    s.top_p = static_cast<float>(json_number(req["top_p"], "top_p", 0, 1));
    check(s.top_p > 0, "top_p", "must be above 0");
  }
  if (req.contains("top_k")) s.top_k = static_cast<int>(json_integer(req["top_k"], "top_k", 0, kMaxTokensLimit));
  if (req.contains("seed"))
    s.seed = static_cast<uint64_t>(json_integer(req["seed"], "seed", 0, std::numeric_limits<int64_t>::max()));
  if (req.contains("stop")) {
    const json& stop = req["stop"];
    options.stop_strings.clear();
    if (stop.is_array()) {
      check(stop.size() <= max_stops, "stop", "at most ", max_stops, " strings");
      for (const json& v : stop) options.stop_strings.push_back(json_text(v, "stop"));
    } else if (!stop.is_null()) {
      options.stop_strings.push_back(json_text(stop, "stop"));
    }
    for (const std::string& st : options.stop_strings) check(!st.empty(), "stop", "empty stop string");
  }
}

}  // namespace fsvd
