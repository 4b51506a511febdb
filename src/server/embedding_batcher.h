#pragma once
// The encoder's side of an embedding server: one thread runs forward passes;
// HTTP workers queue their request's inputs and wait. Each pass takes every
// input queued, in arrival order, up to a token budget (at least one input),
// so concurrent requests share passes instead of running one pass each; a
// large request is split over several passes.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/encoder_executor.h"

namespace fsvd {

// One request's inputs and, once done, their embeddings.
class EmbeddingJob {
 public:
  EmbeddingJob(std::vector<EncoderInput> inputs, int64_t dimensions);
  const std::vector<EncoderInput>& inputs() const { return inputs_; }
  // Blocks until every input has been embedded or the encoder failed.
  void wait();
  // After wait(): [inputs, dimensions], and the encoder's error ("" when it did not fail).
  const std::vector<float>& embeddings() const { return embeddings_; }
  const std::string& error() const { return error_; }

 private:
  friend class EmbeddingBatcher;
  // Batcher thread: `done` more inputs have their embeddings written.
  void finish(size_t done);
  // Batcher thread: the encoder failed; the job ends now with `error`.
  void fail(const std::string& error);

  std::vector<EncoderInput> inputs_;
  std::vector<float> embeddings_;
  std::mutex mutex_;
  std::condition_variable cv_;
  size_t remaining_;
  std::string error_;
};

struct EmbedderStats {
  uint64_t passes = 0;          // forward passes run
  uint64_t pass_inputs = 0;     // inputs embedded by them
  uint64_t pass_tokens = 0;     // tokens those inputs had
  int64_t waiting_inputs = 0;   // queued, not yet in a pass
};

class EmbeddingBatcher {
 public:
  // `encoder` must outlive the batcher, and nothing else may run it.
  // `pass_tokens`: the token budget of one forward pass.
  EmbeddingBatcher(EncoderExecutor& encoder, int64_t pass_tokens);
  ~EmbeddingBatcher();  // waits for the running pass; queued requests end with an error
  EmbeddingBatcher(const EmbeddingBatcher&) = delete;
  EmbeddingBatcher& operator=(const EmbeddingBatcher&) = delete;

  // Queues a request's inputs (valid for the encoder: see EncoderExecutor::forward).
  std::shared_ptr<EmbeddingJob> submit(std::vector<EncoderInput> inputs);
  // Called once, on the batcher's thread, when a pass throws (before that
  // pass's jobs and every later one end with the error).
  void on_failure(std::function<void(const std::string&)> callback);
  // Ends every request not yet answered (queued, or in the running pass,
  // which still completes) with `error` at once.
  void cancel_all(const std::string& error);
  EmbedderStats stats() const;
  int64_t dimensions() const { return encoder_.model().config.hidden; }

 private:
  struct Item {
    std::shared_ptr<EmbeddingJob> job;
    size_t index;
  };
  void loop();
  // Takes the next pass's items from the queue (the lock held).
  std::vector<Item> take_pass();
  void run_pass(const std::vector<Item>& pass);
  void fail_all(std::vector<Item> pass, const std::string& error);

  EncoderExecutor& encoder_;
  int64_t pass_tokens_;
  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::vector<std::shared_ptr<EmbeddingJob>> running_;  // the jobs of the pass being run
  bool stop_ = false;
  std::string failure_;  // set once a pass failed
  std::function<void(const std::string&)> on_failure_;
  EmbedderStats stats_;
  std::thread thread_;
};

}  // namespace fsvd
