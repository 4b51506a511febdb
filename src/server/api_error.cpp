#include "server/api_error.h"

#include "server/json_params.h"

namespace fsvd {

void read_request_body(std::string_view body, const std::function<void(const nlohmann::json&)>& read) {
  try {
    read(parse_json_object(body));
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw ApiError(400, "invalid_request_error", e.where() == "request" ? "" : e.where(), "", e.what());
  }
}

}  // namespace fsvd
