#include "families/config_json.h"

#include <filesystem>

#include "core/error.h"
#include "core/read_file.h"

namespace fsvd {

namespace fs = std::filesystem;
using json = nlohmann::json;

json parse_json(std::string_view text, const std::string& where) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(where, "not valid JSON: ", e.what());
  }
}

json read_json_file(const std::string& path) { return parse_json(read_file(path), path); }

std::string config_json_mismatch(const std::string& path, const std::function<bool(const json&)>& claims,
                                 const std::string& unclaimed) {
  if (!fs::is_directory(path)) return "not a directory";
  const fs::path config = fs::path(path) / "config.json";
  if (!fs::exists(config)) return "directory has no config.json";
  try {
    const json j = read_json_file(config.string());
    return j.is_object() && claims(j) ? "" : unclaimed;
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace fsvd
