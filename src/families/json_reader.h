#pragma once
// Typed access to one JSON object of a config file, naming the key (with its
// parent's prefix) in every error. A null counts as absent: Hugging Face
// writes nulls for unset optional fields.
#include <cfloat>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fsvd {

class JsonReader {
  using json = nlohmann::json;

 public:
  JsonReader(const json& obj, const std::string& where, std::string prefix = "")
      : obj_(obj), where_(where), prefix_(std::move(prefix)) {}

  bool has(const char* key) const {
    auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null();
  }

  const json& at(const char* key) const {
    check(has(key), where_, "missing required key '", prefix_, key, "'");
    return *obj_.find(key);
  }

  int integer(const char* key) const {
    const json& v = at(key);
    check(v.is_number_integer(), where_, "'", prefix_, key, "' must be an integer, got ", v.type_name());
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= INT_MAX
                                             : v.get<int64_t>() >= INT_MIN && v.get<int64_t>() <= INT_MAX;
    check(fits, where_, "'", prefix_, key, "' = ", v.dump(), " does not fit in 32 bits");
    return static_cast<int>(v.get<int64_t>());
  }
  int integer(const char* key, int fallback) const { return has(key) ? integer(key) : fallback; }

  float real(const char* key) const {
    const json& v = at(key);
    check(v.is_number(), where_, "'", prefix_, key, "' must be a number, got ", v.type_name());
    const double x = v.get<double>();
    check(std::isfinite(x) && std::fabs(x) <= FLT_MAX, where_, "'", prefix_, key, "' = ", v.dump(),
          " is out of range");
    return static_cast<float>(x);
  }
  float real(const char* key, float fallback) const { return has(key) ? real(key) : fallback; }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = at(key);
    check(v.is_boolean(), where_, "'", prefix_, key, "' must be true or false, got ", v.type_name());
    return v.get<bool>();
  }

  std::string string(const char* key) const {
    const json& v = at(key);
    check(v.is_string(), where_, "'", prefix_, key, "' must be a string, got ", v.type_name());
    return v.get<std::string>();
  }

  JsonReader object(const char* key) const {
    const json& v = at(key);
    check(v.is_object(), where_, "'", prefix_, key, "' must be an object, got ", v.type_name());
    return JsonReader(v, where_, prefix_ + key + ".");
  }

  std::vector<std::string> strings(const char* key) const {
    const json& v = at(key);
    check(v.is_array(), where_, "'", prefix_, key, "' must be a list, got ", v.type_name());
    std::vector<std::string> out;
    for (const json& e : v) {
      check(e.is_string(), where_, "'", prefix_, key, "' must hold strings, found ", e.type_name());
      out.push_back(e.get<std::string>());
    }
    return out;
  }

 private:
  const json& obj_;
  const std::string& where_;
  std::string prefix_;
};

}  // namespace fsvd
