#pragma once
// The server's counters and histograms, written in Prometheus' text format
// (version 0.0.4) for GET /metrics. Updates are lock-free (atomics), so the
// engine thread never waits on a scrape.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "server/embedding_batcher.h"

namespace fsvd {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, increasing
  void observe(double value);
  // The _bucket, _sum and _count lines of `name`.
  std::string text(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<uint64_t>> buckets_;  // per bound, not cumulative; the last is +Inf
  std::atomic<double> sum_{0};
};

class Metrics {
 public:
  Metrics();
  // One HTTP request answered on `endpoint` ("/v1/completions", ...) with `status`.
  void count_request(const std::string& endpoint, int status);
  // A finished generation: its tokens and times.
  void count_generation(const RequestResult& result);
  void observe_inter_token(double seconds) { inter_token_.observe(seconds); }
  // An answered /v1/embeddings request: its inputs, their tokens, its time in the server.
  void count_embedding(int64_t inputs, int64_t tokens, double seconds);
  // A decoder server's families, with the engine's gauges (running, waiting, KV blocks) as of now.
  std::string text(const EngineStats& engine) const;
  // An encoder server's families, with the batcher's passes and queue as of now.
  std::string text(const EmbedderStats& embedder) const;

 private:
  // The requests family, shared by both kinds of server.
  void requests_text(std::ostringstream& os) const;

  mutable std::mutex requests_mutex_;  // scrape and count_request only: not on the engine thread
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::atomic<uint64_t> prompt_tokens_{0}, generation_tokens_{0}, finished_{0};
  std::atomic<uint64_t> embedding_requests_{0}, embedding_inputs_{0}, embedding_tokens_{0};
  Histogram time_to_first_token_, inter_token_, request_duration_, queue_time_, embedding_duration_;
};

}  // namespace fsvd
