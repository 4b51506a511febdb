#pragma once
// The hand-off between the engine thread and the HTTP worker of one request:
// the engine's callbacks only append under a lock and notify (no I/O, so a
// slow client never stalls a step); the worker takes what has arrived.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/engine.h"

namespace fsvd {

class GenerationStream {
 public:
  // One engine request per choice.
  explicit GenerationStream(size_t choices);

  // Engine thread.
  void add_text(size_t choice, std::string_view text);
  void add_token(size_t choice, const TokenLogprobs* logprobs);
  void finish(size_t choice, const RequestResult& result);

  // What one choice produced since the last take.
  struct Update {
    size_t choice = 0;
    std::string text;
    std::vector<TokenLogprobs> logprobs;
    int tokens = 0;
    std::optional<RequestResult> result;  // set once, with its last update
  };
  // Waits up to `timeout` for news, then takes every choice's.
  std::vector<Update> take(std::chrono::milliseconds timeout);
  bool finished() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Update> pending_;
  std::vector<bool> fresh_;
  size_t delivered_ = 0;  // finished choices already taken
};

}  // namespace fsvd
