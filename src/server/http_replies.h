#pragma once
// What the server's endpoint handlers answer and log with: JSON bodies,
// OpenAI error objects, and one stderr line per request.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace httplib {
struct Response;
}  // namespace httplib

namespace fsvd {

using ServerClock = std::chrono::steady_clock;

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
// An OpenAI error object (param and code null when empty).
void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = "", const std::string& code = "");
// OpenAI's error type of an HTTP status.
const char* error_type(int status);
double seconds_since(ServerClock::time_point t);

// "serve: id=ID PATH status=S FIELDS total_ms=T client=C[ error="..."]" on
// stderr, written at once so that lines never interleave.
void write_request_line(const std::string& id, const std::string& path, int status, const std::string& fields,
                        ServerClock::time_point start, const std::string& client, const std::string& error);

}  // namespace fsvd
