#pragma once
// One model instance on one device, with its KV cache. The runtime drives any
// backend through this interface.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fsvd {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `tokens` at positions [pos, pos + n): appends their keys/values to the
  // cache (positions >= pos are overwritten) and writes fp32 logits, either for
  // every token ([n, vocab], all_logits) or for the last one only ([vocab]).
  virtual void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
                       std::vector<float>& logits) = 0;
  // Maximum number of positions the cache holds.
  virtual int context_size() const = 0;
  virtual int vocab_size() const = 0;
};

// The checks every forward() makes before touching its cache: tokens present
// and inside the vocabulary, pos within the `filled` cached positions, and the
// tokens fitting the context. Throws Error naming `where`.
void check_forward_request(const std::string& where, std::span<const int32_t> tokens, int pos, int filled,
                           int context, int vocab);

}  // namespace fsvd
