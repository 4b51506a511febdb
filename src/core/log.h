#pragma once
// Diagnostics go to stderr; stdout is reserved for results (generated text, tables, JSON).
#include <cstdio>
#include <string>

namespace fsvd {

inline void log_info(const std::string& msg) { std::fprintf(stderr, "%s\n", msg.c_str()); }

}  // namespace fsvd
