#pragma once
// One model instance on one device, with its KV cache. The runtime drives any
// backend through this interface.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/sampling_params.h"

namespace fsvd {

// What a backend can say about its cost, for benchmarks (0 where it does not apply).
struct ExecutorStats {
  std::string device;            // "cpu", "cuda: <GPU name>"
  size_t weight_bytes = 0;       // resident weights, shared storage once
  size_t cache_bytes = 0;        // KV cache
  size_t device_used_bytes = 0;  // all memory in use on the device (GPU)
  int kernels_per_token = 0;     // kernels in one decode step
  int launches_per_token = 0;    // host launch calls per decode step
  double capture_ms = 0;         // CUDA graph capture + instantiation
};

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
  virtual ExecutorStats stats() { return {}; }

  // Backends that pick the next token themselves (the GPU: no logits cross to
  // the host) say so here and implement forward_next.
  virtual bool samples_on_device() const { return false; }
  // Runs `tokens` at [pos, pos + n) like forward() and returns the token that
  // follows, chosen by `params`; the draw is keyed by params.seed and the last
  // token's position. The default throws.
  virtual int32_t forward_next(std::span<const int32_t> tokens, int pos, const SamplingParams& params);
  // A decode loop after forward_next: runs `token` at `pos`, then each token
  // it samples at the next position, handing the sampled tokens to `on_token`
  // in order until it returns false or `count` were handed; returns how many
  // were. The cache then holds the positions of the tokens run. The default
  // calls forward_next per token; the GPU starts each step before the
  // previous one's token reaches the host.
  virtual int decode_stream(int32_t token, int pos, int count, const SamplingParams& params,
                            const std::function<bool(int32_t)>& on_token);
};

// The checks every forward() makes before touching its cache: tokens present
// and inside the vocabulary, pos within the `filled` cached positions, and the
// tokens fitting the context. Throws Error naming `where`.
void check_forward_request(const std::string& where, std::span<const int32_t> tokens, int pos, int filled,
                           int context, int vocab);

}  // namespace fsvd
