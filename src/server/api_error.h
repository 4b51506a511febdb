#pragma once
// A request refused with an HTTP status and OpenAI's error fields, and the
// wrapper every request parser of the server runs its body through.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"

namespace fsvd {

// type: invalid_request_error, ...; param: the field; code: a short name.
class ApiError : public Error {
 public:
  ApiError(int status, std::string type, std::string param, std::string code, std::string message)
      : Error("", std::move(message)),  // the message names the field itself
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;
};

// Parses `body` as one JSON object and calls `read` on it; an Error thrown on
// the way becomes a 400 ApiError whose param is the Error's where() (none for
// a body that is not a JSON object). ApiErrors pass through.
void read_request_body(std::string_view body, const std::function<void(const nlohmann::json&)>& read);

}  // namespace fsvd
