#pragma once
// One model instance on one device, with its paged KV cache. The runtime drives
// any backend through this interface: many sequences per step (step,
// step_sample), or one sequence that owns the whole cache (forward and the
// calls after it).
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

// The KV cache of an executor: `blocks` blocks of `block_size` positions each.
// A sequence's positions live in the blocks its block table lists, in order:
// position p in blocks[p / block_size]. Sequences never share a block they write.
struct KvPages {
  int block_size = 16;
  int blocks = 0;
  int64_t positions() const { return int64_t{block_size} * blocks; }
  // Blocks that hold `n` positions.
  int64_t blocks_for(int64_t n) const { return (n + block_size - 1) / block_size; }
  // The fewest default-size blocks that hold `n` positions.
  static KvPages holding(int64_t n) {
    KvPages p;
    p.blocks = static_cast<int>(p.blocks_for(n));
    return p;
  }
};

// What a step returns for one sequence: nothing (a prompt chunk before its
// last), its last token's result, or (logits only) every token's.
enum class StepOutput { none, last, all };

// One sequence's share of a step: `tokens` run at positions [pos, pos + n)
// (after the pos positions already cached in its blocks), their keys and
// values stored in `blocks`, which cover at least pos + n positions.
struct SeqSlice {
  std::span<const int32_t> tokens;
  int pos = 0;
  std::span<const int32_t> blocks;
  StepOutput output = StepOutput::last;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // The default: one sequence's cache of context_size() positions.
  virtual KvPages kv_pages() const;
  // Runs every slice of `batch` (distinct sequences, in one step: each weight
  // is read once for all their tokens) and writes the fp32 logits of the
  // tokens their outputs ask for, slice after slice, [rows, vocab]. Throws
  // Error for a malformed batch (check_step_request) before touching the
  // cache. The default throws: the backend runs one sequence at a time.
  virtual void step(std::span<const SeqSlice> batch, std::vector<float>& logits);
  // A step that returns, for each slice whose output is `last`, the token
  // chosen after it by that slice's `params` (drawn keyed by params.seed and
  // the token's position), in slice order. Only where samples_on_device();
  // the default throws.
  virtual void step_sample(std::span<const SeqSlice> batch, std::span<const SamplingParams> params,
                           std::vector<int32_t>& tokens);

  // One sequence over the whole cache (its blocks 0, 1, 2, ... in order): runs
  // `tokens` at positions [pos, pos + n), storing their keys/values (positions
  // >= pos are overwritten), and writes fp32 logits, either for every token
  // ([n, vocab], all_logits) or for the last one only ([vocab]).
  virtual void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
                       std::vector<float>& logits) = 0;
  // Most positions one sequence may hold (forward's and step's limit).
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
// The checks every step() makes: at least one slice; each slice's tokens
// inside the vocabulary, its positions within the context, its blocks
// covering them and inside the cache, no block written by two slices.
// Returns the number of token rows.
int64_t check_step_request(const std::string& where, std::span<const SeqSlice> batch, const KvPages& pages,
                           int context, int vocab);

}  // namespace fsvd
