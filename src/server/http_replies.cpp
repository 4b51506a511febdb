#include "server/http_replies.h"

#include <httplib.h>

#include <cstdio>

#include "server/openai_responses.h"

namespace fsvd {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param, const std::string& code) {
  send_json(res, status, error_body(message, type, param, code));
}

const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

double seconds_since(ServerClock::time_point t) {
  return std::chrono::duration<double>(ServerClock::now() - t).count();
}

void write_request_line(const std::string& id, const std::string& path, int status, const std::string& fields,
                        ServerClock::time_point start, const std::string& client, const std::string& error) {
  std::string line = "serve: id=" + id + " " + path + " status=" + std::to_string(status) + " " + fields;
  char total[48];
  std::snprintf(total, sizeof total, " total_ms=%.1f", seconds_since(start) * 1e3);
  line += total;
  line += " client=" + client;
  if (!error.empty()) line += " error=\"" + error + "\"";
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace fsvd
