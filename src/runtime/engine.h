#pragma once
// Continuous batching over one executor: many requests share each step.
// Every step (iteration-level scheduling, as in Orca and vLLM):
//  1. running sequences take one token row each (decode), oldest first, then
//     partly read prompts take chunks of what is left of the step's token
//     budget (chunked prefill: running streams keep producing tokens while a
//     long prompt is read);
//  2. waiting requests are admitted in arrival order while batch slots, the
//     budget and free KV blocks allow;
//  3. one Executor::step runs them all, and each sequence whose rows reach its
//     last token samples the next one.
// A sequence takes KV blocks as it grows. When none are left it preempts the
// newest running sequence: that one's blocks are freed and it waits at the
// head of the queue, to be recomputed from its tokens so far (its sampler
// state kept, so its output is what it would have been). Finished and
// cancelled sequences leave after the step that ends them.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "backends/executor.h"
#include "core/error.h"
#include "runtime/completion.h"
#include "runtime/kv_blocks.h"
#include "runtime/token_logprobs.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct EngineOptions {
  int max_batch = 64;       // sequences in one step
  int max_queue = 1024;     // requests waiting to be admitted
  int step_tokens = 512;    // token rows of one step (decode rows and prompt chunks)
  bool chunked_prefill = true;  // off: a prompt is read whole in the step that admits it
  // Prompt chunks of step_tokens fixed by position (one may overrun the
  // step's budget) rather than what the budget leaves: a prompt is then read
  // in the same chunks whatever shares its steps, and a preempted sequence's
  // generated tokens are re-read one a step, as decode rows (the backend's
  // decode rows are the executor's part: BatchShape::batch_invariant).
  bool batch_invariant = false;
};

// What became of a request, handed over once when it ends.
struct RequestResult {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // the generated ids (a final stop id excluded)
  int prompt_tokens = 0;
  // Completion::stop_reason, "context" (the sequence filled the context),
  // or "cancelled".
  std::string stop_reason;
  int preemptions = 0;
  double queue_seconds = 0;        // submitted to admitted (first time)
  double first_token_seconds = 0;  // submitted to first generated token
  double total_seconds = 0;        // submitted to done
  std::vector<TokenLogprobs> logprobs;         // one per generated token, when Request::logprobs >= 0
  std::vector<TokenLogprobs> prompt_logprobs;  // prompt tokens 1.. (the first has no context), when asked for
};

struct Request {
  std::vector<int32_t> prompt;  // non-empty, at most the context
  GenerateOptions options;
  // Log-probabilities (token_logprobs.h) of each generated token and of each
  // prompt token after the first, with this many most likely alternatives;
  // -1: not computed. Only backends that sample on the host have them.
  int logprobs = -1;
  int prompt_logprobs = -1;
  TextCallback on_text;  // generated text as it becomes final; may be empty
  // Each generated token, after the text it completed went to on_text, with
  // its log-probabilities when asked for (else null); may be empty.
  std::function<void(int32_t token, const TokenLogprobs* logprobs)> on_token;
  std::function<void(const RequestResult&)> on_done;  // once, after the last text
};

// submit() refuses a request because the waiting queue is full.
class QueueFull : public Error {
 public:
  using Error::Error;
};

struct EngineStats {
  int running = 0, waiting = 0;
  int used_blocks = 0, total_blocks = 0;
  int64_t steps = 0, preemptions = 0;
  int64_t rows = 0;              // token rows run (prompts, recomputes, decode)
  int64_t generated_tokens = 0;  // tokens accepted into outputs
};

class Engine {
 public:
  // `executor` and `tokenizer` must outlive the engine; the executor's KV
  // cache is the engine's (no other caller may run steps on it).
  Engine(Executor& executor, const Tokenizer& tokenizer, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request and returns its id (thread-safe). Throws Error for a
  // request that can never run (empty prompt, longer than the context, bad
  // sampling parameters, log-probabilities on a backend that samples on the
  // device) and QueueFull when max_queue requests wait.
  uint64_t submit(Request request);
  // Ends a request at the next step (its on_done says "cancelled"); unknown
  // or finished ids are ignored. Thread-safe.
  void cancel(uint64_t id);
  // Runs one step; returns false, doing nothing, when no request is running
  // or waiting. Callbacks run here, on the caller's thread.
  bool step();
  // Steps until every request has ended.
  void run();
  EngineStats stats() const;

 private:
  struct Sequence;
  struct Planned {
    Sequence* seq;
    int rows;
  };
  using Clock = std::chrono::steady_clock;
  void take_cancellations();
  // Blocks for `seq` to hold `positions`, preempting unplanned running
  // sequences (newest first) as needed; false when `seq` itself had to go.
  bool reserve(Sequence& seq, int64_t positions);
  void preempt(Sequence& seq);
  std::vector<Planned> schedule();
  // Whether `seq`'s next `rows` rows reach a prompt position whose
  // log-probabilities are still to be kept (the step then returns every row).
  bool wants_prompt_logprobs(const Sequence& seq, int rows) const;
  // Keeps the prompt log-probabilities of `rows` logits rows from position `pos`.
  void record_prompt_logprobs(Sequence& seq, int pos, int rows, const float* logits);
  // The token sampled after `seq`'s rows (from `logits`, empty on the device):
  // accepted, run next or ending it.
  void deliver(Sequence& seq, int32_t token, std::span<const float> logits);
  // Ends `seq` (Completion::end first for a reason of the engine's).
  void finish(Sequence& seq);
  // Drops ended sequences and publishes the counts stats() reports.
  void remove_finished();

  Executor& executor_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  KvBlocks blocks_;
  uint64_t next_id_ = 1;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
  std::deque<std::unique_ptr<Sequence>> waiting_;   // guarded by mutex_ (submit appends)
  std::unordered_set<uint64_t> cancelled_;          // guarded by mutex_
  mutable std::mutex mutex_;
  EngineStats stats_;     // guarded by mutex_: what stats() reports
  EngineStats counters_;  // the step thread's running totals, published into stats_
  // One step's inputs and outputs, reused.
  std::vector<SeqSlice> slices_;
  std::vector<SamplingParams> params_;
  std::vector<float> logits_;
  std::vector<int32_t> sampled_;
};

}  // namespace fsvd
