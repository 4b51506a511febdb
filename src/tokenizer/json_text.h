#pragma once
// JSON text of the tokenizer files (tokenizer.json, tokenizer_config.json).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fsvd {

// `text` parsed; Error naming `where` when it is not JSON.
nlohmann::json parse_tokenizer_json(std::string_view text, const std::string& where);

}  // namespace fsvd
