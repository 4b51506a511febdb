#include "server/embedding_batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "backends/cpu/cpu_encoder.h"
#include "core/error.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using namespace std::chrono_literals;

EncoderInput input(std::vector<int32_t> ids) { return {ids, std::vector<int32_t>(ids.size(), 0)}; }

// An encoder whose passes wait until the test opens them, and that records
// each pass's inputs. Token states are (id + dimension), so a mean-pooled
// embedding is (mean id + dimension).
class GatedEncoder : public EncoderExecutor {
 public:
  explicit GatedEncoder(const EncoderModel& m) : EncoderExecutor(m) {}
  void forward(std::span<const EncoderInput> batch, std::vector<float>& states,
               std::vector<int64_t>& offsets) override {
    offsets = check_batch(batch);
    std::unique_lock lock(mutex_);
    passes_.push_back(batch.size());
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_ > 0; });
    --open_;
    if (fail_) throw Error("gpu", "device lost");
    const int64_t d = model().config.hidden;
    states.clear();
    for (const EncoderInput& in : batch)
      for (int32_t id : in.ids)
        for (int64_t j = 0; j < d; ++j) states.push_back(static_cast<float>(id + j));
  }
  void open(int passes) {
    std::lock_guard lock(mutex_);
    open_ += passes;
    cv_.notify_all();
  }
  // Waits until `n` passes have started; their sizes.
  std::vector<size_t> started(size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return passes_.size() >= n; });
    return passes_;
  }
  void fail() {
    std::lock_guard lock(mutex_);
    fail_ = true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<size_t> passes_;
  int open_ = 0;
  bool fail_ = false;
};

float mean_id(const EncoderInput& in) {
  float sum = 0;
  for (int32_t id : in.ids) sum += static_cast<float>(id);
  return sum / static_cast<float>(in.ids.size());
}

void expect_embeddings(EmbeddingJob& job, int64_t d) {
  job.wait();
  ASSERT_EQ(job.error(), "");
  ASSERT_EQ(job.embeddings().size(), job.inputs().size() * d);
  for (size_t i = 0; i < job.inputs().size(); ++i)
    for (int64_t j = 0; j < d; ++j) EXPECT_FLOAT_EQ(job.embeddings()[i * d + j], mean_id(job.inputs()[i]) + j);
}

class Batcher : public ::testing::Test {
 protected:
  EncoderModel model_ = testing::random_encoder(testing::small_encoder_config(), 1);
  GatedEncoder encoder_{model_};
  int64_t d_ = model_.config.hidden;
};

// While a pass runs, requests queue; the next pass takes all of them.
TEST_F(Batcher, RequestsQueuedDuringAPassShareTheNext) {
  EmbeddingBatcher b(encoder_, 1000);
  auto first = b.submit({input({2, 5, 3})});
  encoder_.started(1);
  std::vector<std::shared_ptr<EmbeddingJob>> queued;
  for (int i = 0; i < 5; ++i) queued.push_back(b.submit({input({2, 7 + i, 3}), input({2, 3})}));
  EXPECT_EQ(b.stats().waiting_inputs, 10);
  encoder_.open(2);
  expect_embeddings(*first, d_);
  for (auto& job : queued) expect_embeddings(*job, d_);
  EXPECT_EQ(encoder_.started(2), (std::vector<size_t>{1, 10}));
  const EmbedderStats st = b.stats();
  EXPECT_EQ(st.passes, 2u);
  EXPECT_EQ(st.pass_inputs, 11u);
  EXPECT_EQ(st.pass_tokens, 3u + 5 * 5);
  EXPECT_EQ(st.waiting_inputs, 0);
}

// A pass takes inputs in arrival order up to the token budget (one input at
// least, however long), so a large request is split over several passes.
TEST_F(Batcher, PassesStopAtTheTokenBudget) {
  EmbeddingBatcher b(encoder_, 8);
  auto blocker = b.submit({input({2, 3})});
  encoder_.started(1);
  auto big = b.submit({input({2, 4, 4, 3}), input({2, 5, 5, 3}), input({2, 6, 6, 6, 6, 6, 6, 6, 6, 6, 3}),
                       input({2, 3}), input({2, 7, 3})});
  auto small = b.submit({input({2, 8, 3})});
  encoder_.open(4);
  for (auto* job : {&blocker, &big, &small}) expect_embeddings(**job, d_);
  EXPECT_EQ(encoder_.started(4), (std::vector<size_t>{1, 2, 1, 3}));  // 4+4 | 11 alone | 2+3+3
}

// A pass that throws ends its requests and every queued one with the error,
// tells the server once, and later requests fail at once.
TEST_F(Batcher, AFailedPassFailsEveryWaitingRequest) {
  EmbeddingBatcher b(encoder_, 1000);
  int failures = 0;
  b.on_failure([&](const std::string& e) {
    ++failures;
    EXPECT_NE(e.find("device lost"), std::string::npos);
  });
  auto running = b.submit({input({2, 3})});
  encoder_.started(1);
  auto waiting = b.submit({input({2, 4, 3})});
  encoder_.fail();
  encoder_.open(1);
  for (auto* job : {&running, &waiting}) {
    (*job)->wait();
    EXPECT_NE((*job)->error().find("device lost"), std::string::npos);
  }
  auto later = b.submit({input({2, 3})});
  later->wait();
  EXPECT_FALSE(later->error().empty());
  EXPECT_EQ(failures, 1);
}

// Shutdown: every request not answered yet ends at once, the one in the
// running pass too (the pass itself completes); the batcher still works.
TEST_F(Batcher, CancelAllEndsWaitingAndRunningRequestsAtOnce) {
  EmbeddingBatcher b(encoder_, 1000);
  auto running = b.submit({input({2, 3})});
  encoder_.started(1);
  auto queued = b.submit({input({2, 4, 3})});
  b.cancel_all("shutting down");
  for (auto* job : {&running, &queued}) {
    (*job)->wait();
    EXPECT_EQ((*job)->error(), "shutting down");
  }
  EXPECT_EQ(b.stats().waiting_inputs, 0);
  encoder_.open(2);
  auto later = b.submit({input({2, 9, 3})});
  expect_embeddings(*later, d_);
  EXPECT_EQ(encoder_.started(2), (std::vector<size_t>{1, 1}));
}

// The real CPU encoder behind the batcher, many threads submitting at once:
// every embedding equals the input's embedding computed alone.
TEST(BatcherCpu, ConcurrentRequestsGetTheirOwnEmbeddings) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 3);
  CpuEncoder encoder(m, 1);
  std::vector<std::vector<EncoderInput>> requests;
  for (int r = 0; r < 16; ++r) {
    std::vector<EncoderInput> inputs;
    for (int i = 0; i <= r % 3; ++i) {
      std::vector<int32_t> ids = {2};
      for (int t = 0; t < 1 + (r * 7 + i * 3) % 15; ++t) ids.push_back(5 + (r * 13 + t * 5 + i) % 40);
      ids.push_back(3);
      inputs.push_back(input(ids));
    }
    requests.push_back(std::move(inputs));
  }
  std::vector<std::vector<float>> want;
  for (const auto& inputs : requests) want.push_back(encoder.embed(inputs));
  std::vector<std::vector<float>> got(requests.size());
  {
    EmbeddingBatcher b(encoder, 64);
    std::vector<std::thread> clients;
    for (size_t r = 0; r < requests.size(); ++r)
      clients.emplace_back([&, r] {
        auto job = b.submit(requests[r]);
        job->wait();
        EXPECT_EQ(job->error(), "");
        got[r] = job->embeddings();
      });
    for (auto& c : clients) c.join();
    EXPECT_LE(b.stats().passes, requests.size());
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size());
    for (size_t k = 0; k < want[r].size(); ++k) EXPECT_NEAR(got[r][k], want[r][k], 1e-5) << r;
  }
}

}  // namespace
}  // namespace fsvd
