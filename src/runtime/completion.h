#pragma once
// What becomes of one sequence's sampled tokens: a stop id or max_new_tokens
// ends it, its text is decoded as it grows and cut before the first stop
// string. Shared by generate() and the batching engine.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/sampling_params.h"
#include "runtime/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct GenerateOptions {
  int max_new_tokens = 256;
  SamplingParams sampling;
  std::vector<std::string> stop_strings;  // text is cut before the first one
  std::vector<int32_t> stop_ids;          // in addition to tokenizer.stop_ids()
  bool ignore_eos = false;                // tokenizer.stop_ids() do not stop it (fixed-length runs)
};

// Text pieces in order; their concatenation is the generated text.
using TextCallback = std::function<void(std::string_view)>;

class Completion {
 public:
  // Throws Error for a negative max_new_tokens or an empty stop string.
  Completion(const Tokenizer& tokenizer, std::span<const int32_t> prompt, const GenerateOptions& options);
  // Takes the next sampled token, handing any text that became final to
  // `on_text`; says whether to run it and sample another. A stop id is not
  // counted nor printed.
  bool accept(int32_t token, const TextCallback& on_text);
  // Hands over the text still held back (unless a stop string ended it).
  void finish(const TextCallback& on_text);
  // Ends it for a reason of the caller's (the context is full, say).
  void end(std::string reason) { reason_ = std::move(reason); }

  int generated() const { return generated_; }
  // "eos": a stop id was sampled; "stop_string"; "length": max_new_tokens
  // reached (the default); or the caller's reason.
  const std::string& stop_reason() const { return reason_; }

 private:
  int max_new_tokens_;
  std::vector<int32_t> stop_ids_;
  StreamDecoder stream_;
  StopStringFilter stop_text_;
  int generated_ = 0;
  std::string reason_ = "length";
};

}  // namespace fsvd
