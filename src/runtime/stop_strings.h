#pragma once
// Cuts streamed text at the first stop string. Text that could still grow into
// a stop string is held back until it cannot, so nothing after (or part of) a
// stop string is ever emitted.
#include <string>
#include <string_view>
#include <vector>

namespace fsvd {

class StopStringFilter {
 public:
  // Throws Error for an empty stop string.
  explicit StopStringFilter(std::vector<std::string> stops);
  // Appends `text`; returns what is now safe to emit. Once a stop string
  // completes, returns the text before it, and stopped() turns true.
  std::string push(std::string_view text);
  bool stopped() const { return stopped_; }
  // The held-back text, when the stream ends without a stop string.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // not yet emitted: a possible start of a stop string
  bool stopped_ = false;
};

}  // namespace fsvd
