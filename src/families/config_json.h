#pragma once
// JSON reading shared by the families: every file's errors name the file, and
// Hugging Face-style directories are recognised by their config.json.
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fsvd {

// `text` parsed; Error naming `where` when it is not JSON.
nlohmann::json parse_json(std::string_view text, const std::string& where);

// The JSON file at `path`, parsed (Errors name the file).
nlohmann::json read_json_file(const std::string& path);

// Family::mismatch for directories with a config.json: "" when `path` is a
// directory whose config.json `claims` (a family's own keys or names), else
// why not (`unclaimed` when it parses but does not claim the directory).
std::string config_json_mismatch(const std::string& path, const std::function<bool(const nlohmann::json&)>& claims,
                                 const std::string& unclaimed);

}  // namespace fsvd
