#pragma once
// One error type for the whole project: what went wrong and where (a file,
// a tensor, a flag). Every layer throws it; apps print it and exit non-zero.
#include <sstream>
#include <stdexcept>
#include <string>

namespace fsvd {

class Error : public std::runtime_error {
 public:
  Error(std::string where, std::string what)
      : std::runtime_error(where.empty() ? what : where + ": " + what),
        where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

// Builds the message from streamable pieces: fail(path, "tensor ", name, " has ", n, " dims").
template <typename... Parts>
[[noreturn]] void fail(const std::string& where, const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(where, os.str());
}

template <typename... Parts>
void check(bool ok, const std::string& where, const Parts&... parts) {
  if (!ok) fail(where, parts...);
}

}  // namespace fsvd
