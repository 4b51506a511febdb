#include "server/embedding_batcher.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace fsvd {

EmbeddingJob::EmbeddingJob(std::vector<EncoderInput> inputs, int64_t dimensions)
    : inputs_(std::move(inputs)), embeddings_(inputs_.size() * dimensions), remaining_(inputs_.size()) {}

void EmbeddingJob::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return remaining_ == 0; });
}

void EmbeddingJob::finish(size_t done) {
  {
    std::lock_guard lock(mutex_);
    remaining_ -= std::min(done, remaining_);
    if (remaining_ > 0) return;
  }
  cv_.notify_all();
}

void EmbeddingJob::fail(const std::string& error) {
  {
    std::lock_guard lock(mutex_);
    if (remaining_ == 0) return;
    error_ = error;
    remaining_ = 0;
  }
  cv_.notify_all();
}

EmbeddingBatcher::EmbeddingBatcher(EncoderExecutor& encoder, int64_t pass_tokens)
    : encoder_(encoder), pass_tokens_(pass_tokens) {
  check(pass_tokens >= 1, "EmbeddingBatcher", "the token budget of a pass must be positive");
  thread_ = std::thread([this] { loop(); });
}

EmbeddingBatcher::~EmbeddingBatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  cancel_all("the server is shutting down");
}

void EmbeddingBatcher::cancel_all(const std::string& error) {
  std::vector<std::shared_ptr<EmbeddingJob>> jobs;
  {
    std::lock_guard lock(mutex_);
    jobs = running_;
    for (const Item& it : queue_) jobs.push_back(it.job);
    queue_.clear();
    stats_.waiting_inputs = 0;
  }
  for (const auto& job : jobs) job->fail(error);
}

std::shared_ptr<EmbeddingJob> EmbeddingBatcher::submit(std::vector<EncoderInput> inputs) {
  auto job = std::make_shared<EmbeddingJob>(std::move(inputs), dimensions());
  if (job->inputs().empty()) return job;  // nothing to wait for
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) {
      job->fail(failure_);
      return job;
    }
    for (size_t i = 0; i < job->inputs().size(); ++i) queue_.push_back({job, i});
    stats_.waiting_inputs = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return job;
}

void EmbeddingBatcher::on_failure(std::function<void(const std::string&)> callback) {
  std::lock_guard lock(mutex_);
  on_failure_ = std::move(callback);
}

EmbedderStats EmbeddingBatcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::vector<EmbeddingBatcher::Item> EmbeddingBatcher::take_pass() {
  std::vector<Item> pass;
  int64_t tokens = 0;
  while (!queue_.empty()) {
    const int64_t n = static_cast<int64_t>(queue_.front().job->inputs()[queue_.front().index].ids.size());
    if (!pass.empty() && tokens + n > pass_tokens_) break;
    tokens += n;
    pass.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  stats_.waiting_inputs = static_cast<int64_t>(queue_.size());
  return pass;
}

void EmbeddingBatcher::loop() {
  while (true) {
    std::vector<Item> pass;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      pass = take_pass();
      running_.clear();
      for (const Item& it : pass) running_.push_back(it.job);
    }
    try {
      run_pass(pass);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "serve: encoder failed: %s\n", e.what());
      fail_all(std::move(pass), e.what());
    }
    std::lock_guard lock(mutex_);
    running_.clear();
  }
}

void EmbeddingBatcher::run_pass(const std::vector<Item>& pass) {
  std::vector<EncoderInput> batch;
  batch.reserve(pass.size());
  uint64_t tokens = 0;
  for (const Item& it : pass) {
    batch.push_back(it.job->inputs()[it.index]);
    tokens += batch.back().ids.size();
  }
  const std::vector<float> out = encoder_.embed(batch);
  {
    std::lock_guard lock(mutex_);  // counted before any client hears of the pass
    ++stats_.passes;
    stats_.pass_inputs += pass.size();
    stats_.pass_tokens += tokens;
  }
  const int64_t d = dimensions();
  // Consecutive items of one job finish together.
  for (size_t i = 0; i < pass.size();) {
    size_t j = i;
    for (; j < pass.size() && pass[j].job == pass[i].job; ++j)
      std::copy(out.begin() + j * d, out.begin() + (j + 1) * d, pass[i].job->embeddings_.begin() + pass[j].index * d);
    pass[i].job->finish(j - i);
    i = j;
  }
}

void EmbeddingBatcher::fail_all(std::vector<Item> pass, const std::string& error) {
  std::function<void(const std::string&)> callback;
  {
    std::lock_guard lock(mutex_);
    failure_ = error;
    pass.insert(pass.end(), queue_.begin(), queue_.end());
    queue_.clear();
    stats_.waiting_inputs = 0;
    callback = std::move(on_failure_);
  }
  if (callback) callback(error);
  for (const Item& it : pass) it.job->fail(error);
}

}  // namespace fsvd
