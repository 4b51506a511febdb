// The batching engine on the CPU backend: every request gets what generate()
// gives it alone, whatever else shares its steps, with chunked prefill on and
// off, sequences joining and leaving, the KV cache full (queueing and
// preemption), and cancellations.
#include "runtime/engine.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "runtime/generate.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

constexpr int kVocab = 37;

// Id 0 is BOS, 1 EOS; the others decode to letters, some with a space.
class LetterTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids)
      if (id > 1) s += std::string(1, char('a' + id % 6)) + (id % 4 == 0 ? " " : "");
    return s;
  }
  int32_t vocab_size() const override { return kVocab; }
  int32_t bos_id() const override { return 0; }
  int32_t eos_id() const override { return 1; }
};

Model test_model() {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(32, 48, 2, 4, 2, 8, kVocab, 64);
  spec.ranks = {6, 4, 4, 0, 10, 10, 12};
  return testing::random_model(spec);
}

struct Outcome {
  std::string text, stop_reason;
  size_t generated = 0;
};

// Requests of mixed prompt lengths, limits and sampling rules.
std::vector<Request> make_requests(int count) {
  std::mt19937 rng(5);
  std::vector<Request> out;
  for (int i = 0; i < count; ++i) {
    Request r;
    const int len = 1 + static_cast<int>(rng() % 29);
    for (int t = 0; t < len; ++t) r.prompt.push_back(2 + static_cast<int32_t>(rng() % (kVocab - 2)));
    r.options.max_new_tokens = 1 + static_cast<int>(rng() % 14);
    if (i % 3 == 1) r.options.sampling = {0.9f, 0, 1.0f, 100u + i};
    if (i % 3 == 2) r.options.sampling = {1.3f, 8, 0.9f, 200u + i};
    if (i % 4 == 3) r.options.stop_strings = {"c"};
    out.push_back(std::move(r));
  }
  return out;
}

Outcome alone(const Model& model, const Tokenizer& tok, int ctx, const Request& r) {
  CpuExecutor ex(model, ctx, 1);
  Outcome o;
  const GenerateStats st = generate(ex, tok, r.prompt, r.options, [&](std::string_view t) { o.text += t; });
  o.stop_reason = st.stop_reason;
  o.generated = static_cast<size_t>(st.generated_tokens);
  return o;
}

struct Config {
  const char* name;
  EngineOptions options;
  int blocks;  // of 4 positions
};

class EngineTest : public ::testing::TestWithParam<Config> {};

TEST_P(EngineTest, EveryRequestGetsWhatItGetsAlone) {
  const Config config = GetParam();
  const Model model = test_model();
  const LetterTokenizer tok;
  const int ctx = 40;
  CpuExecutor ex(model, KvPages{4, config.blocks}, ctx, 1);
  Engine engine(ex, tok, config.options);

  const std::vector<Request> requests = make_requests(14);
  std::vector<Outcome> got(requests.size());
  int preempted = 0, done = 0;
  auto submit = [&](size_t i) {
    Request r = requests[i];
    r.on_text = [&got, i](std::string_view t) { got[i].text += t; };
    r.on_done = [&, i](const RequestResult& res) {
      got[i].stop_reason = res.stop_reason;
      got[i].generated = res.tokens.size();
      preempted += res.preemptions;
      ++done;
    };
    engine.submit(std::move(r));
  };
  // Half now, half while the first ones run: sequences join mid-run.
  for (size_t i = 0; i < requests.size() / 2; ++i) submit(i);
  for (int s = 0; s < 3; ++s) engine.step();
  for (size_t i = requests.size() / 2; i < requests.size(); ++i) submit(i);
  engine.run();

  ASSERT_EQ(done, static_cast<int>(requests.size()));
  for (size_t i = 0; i < requests.size(); ++i) {
    const Outcome want = alone(model, tok, ctx, requests[i]);
    EXPECT_EQ(got[i].text, want.text) << "request " << i;
    EXPECT_EQ(got[i].stop_reason, want.stop_reason) << "request " << i;
    EXPECT_EQ(got[i].generated, want.generated) << "request " << i;
  }
  const EngineStats st = engine.stats();
  EXPECT_EQ(st.running, 0);
  EXPECT_EQ(st.waiting, 0);
  EXPECT_EQ(st.used_blocks, 0);
  EXPECT_EQ(st.preemptions, preempted);
  if (config.blocks < 40) {
    EXPECT_GT(preempted, 0) << "the small cache should have forced preemptions";
  }
  std::fprintf(stderr, "%s: %lld steps, %d preemptions\n", config.name, static_cast<long long>(st.steps), preempted);
}

INSTANTIATE_TEST_SUITE_P(
    Setups, EngineTest,
    ::testing::Values(Config{"chunked", {8, 64, 16, true}, 200}, Config{"whole_prompts", {8, 64, 16, false}, 200},
                      Config{"one_at_a_time", {1, 64, 512, true}, 200}, Config{"wide", {64, 64, 512, true}, 200},
                      Config{"kv_full_chunked", {8, 64, 16, true}, 14},
                      Config{"kv_full_whole", {6, 64, 64, false}, 12},
                      Config{"batch_invariant", {8, 64, 16, true, true}, 200},
                      Config{"kv_full_batch_invariant", {8, 64, 16, true, true}, 14}),
    [](const auto& info) { return std::string(info.param.name); });

// Passes steps on to a CPU executor, keeping each prompt chunk's (pos, rows, output).
class ChunkRecorder : public Executor {
 public:
  struct Chunk {
    int pos, rows;
    StepOutput output;
  };
  ChunkRecorder(const Model& model, KvPages pages, int ctx) : inner_(model, pages, ctx, 1) {}
  KvPages kv_pages() const override { return inner_.kv_pages(); }
  void step(std::span<const SeqSlice> batch, std::vector<float>& logits) override {
    for (const SeqSlice& s : batch)
      if (s.tokens.size() > 1) chunks.push_back({s.pos, static_cast<int>(s.tokens.size()), s.output});
    inner_.step(batch, logits);
  }
  void forward(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits) override {
    inner_.forward(tokens, pos, all_logits, logits);
  }
  int context_size() const override { return inner_.context_size(); }
  int vocab_size() const override { return inner_.vocab_size(); }
  std::vector<Chunk> chunks;

 private:
  CpuExecutor inner_;
};

// Batch-invariant: every prompt is read in chunks of step_tokens from its
// start (a shorter one only as its last), whatever decode rows share the
// step; the default fits chunks to what the decode rows leave of the budget.
TEST(Engine, BatchInvariantPromptChunksAreFixedByPosition) {
  const Model model = test_model();
  const LetterTokenizer tok;
  for (bool invariant : {true, false}) {
    ChunkRecorder ex(model, KvPages{4, 200}, 40);
    EngineOptions options{8, 64, 8, true, invariant};
    Engine engine(ex, tok, options);
    for (const Request& r : make_requests(14)) engine.submit(Request(r));
    engine.run();
    int off_grid = 0;
    for (const ChunkRecorder::Chunk& c : ex.chunks) {
      EXPECT_LE(c.rows, options.step_tokens);
      off_grid += c.pos % options.step_tokens != 0 || (c.rows < options.step_tokens && c.output != StepOutput::last);
    }
    ASSERT_GT(ex.chunks.size(), 10u);
    if (invariant)
      EXPECT_EQ(off_grid, 0);
    else
      EXPECT_GT(off_grid, 0) << "the workload should make the default fit chunks to the budget";
  }
}

Request greedy(std::vector<int32_t> prompt, int max_new, std::string* text = nullptr, RequestResult* result = nullptr) {
  Request r;
  r.prompt = std::move(prompt);
  r.options.max_new_tokens = max_new;
  r.options.stop_ids = {};
  if (text) r.on_text = [text](std::string_view t) { *text += t; };
  if (result) r.on_done = [result](const RequestResult& res) { *result = res; };
  return r;
}

// Batch-invariant, with preemptions: a recomputed sequence reads its prompt
// in the chunks it was first read in and its generated tokens one a step, as
// decode rows (so that their keys and values are what the decode rows first
// wrote); no chunk reaches past a prompt.
TEST(Engine, BatchInvariantRecomputeReadsGeneratedTokensAsDecodeRows) {
  const Model model = test_model();
  const LetterTokenizer tok;
  const int prompt_len = 9;
  ChunkRecorder ex(model, KvPages{4, 10}, 40);
  EngineOptions options{8, 64, 8, true, true};
  Engine engine(ex, tok, options);
  int preempted = 0;
  std::vector<RequestResult> results(6);
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> prompt;
    for (int t = 0; t < prompt_len; ++t) prompt.push_back(2 + (5 * i + 3 * t) % (kVocab - 2));
    engine.submit(greedy(std::move(prompt), 14, nullptr, &results[i]));
  }
  engine.run();
  for (const RequestResult& r : results) preempted += r.preemptions;
  ASSERT_GT(preempted, 0) << "the small cache should have forced preemptions";
  for (const ChunkRecorder::Chunk& c : ex.chunks) {
    EXPECT_LE(c.pos + c.rows, prompt_len) << "a chunk at " << c.pos << " of " << c.rows << " rows";
    EXPECT_EQ(c.pos % options.step_tokens, 0);
  }
}

TEST(Engine, AFullQueueRefusesAtOnceAndAcceptsAgainOnceItDrains) {
  const Model model = test_model();
  const LetterTokenizer tok;
  CpuExecutor ex(model, KvPages{4, 40}, 40, 1);
  Engine engine(ex, tok, {2, 3, 64, true});
  for (int i = 0; i < 3; ++i) engine.submit(greedy({5, 6, 7}, 4));
  EXPECT_THROW(engine.submit(greedy({5, 6, 7}, 4)), QueueFull);
  EXPECT_EQ(engine.stats().waiting, 3);
  engine.step();  // admits two of them
  RequestResult last;
  EXPECT_NO_THROW(engine.submit(greedy({5, 6, 7}, 4, nullptr, &last)));
  engine.run();
  EXPECT_EQ(last.stop_reason.empty(), false);
  EXPECT_EQ(engine.stats().used_blocks, 0);
}

TEST(Engine, RefusesRequestsThatCanNeverRunAndKeepsServing) {
  const Model model = test_model();
  const LetterTokenizer tok;
  CpuExecutor ex(model, KvPages{4, 40}, 16, 1);
  Engine engine(ex, tok);
  EXPECT_THROW(engine.submit(greedy({}, 4)), Error);
  EXPECT_THROW(engine.submit(greedy(std::vector<int32_t>(17, 3), 4)), Error);  // longer than the context
  EXPECT_THROW(engine.submit(greedy({3, kVocab}, 4)), Error);
  EXPECT_THROW(engine.submit(greedy({3, -1}, 4)), Error);
  EXPECT_THROW(engine.submit(greedy({3}, -1)), Error);
  Request bad_sampling = greedy({3}, 4);
  bad_sampling.options.sampling.top_p = 0;
  EXPECT_THROW(engine.submit(std::move(bad_sampling)), Error);
  Request empty_stop = greedy({3}, 4);
  empty_stop.options.stop_strings = {""};
  EXPECT_THROW(engine.submit(std::move(empty_stop)), Error);
  EXPECT_EQ(engine.stats().waiting, 0);
  RequestResult result;
  engine.submit(greedy({3, 4}, 3, nullptr, &result));
  engine.run();
  EXPECT_FALSE(result.stop_reason.empty());
}

TEST(Engine, ASequenceThatFillsItsContextEndsWithContext) {
  const Model model = test_model();
  const LetterTokenizer tok;
  CpuExecutor ex(model, KvPages{4, 10}, 12, 1);
  Engine engine(ex, tok);
  RequestResult result;
  Request r = greedy(std::vector<int32_t>(10, 3), 100, nullptr, &result);
  std::string want;
  CpuExecutor single(model, 12, 1);
  const GenerateStats st = generate(single, tok, r.prompt, r.options, [&](std::string_view t) { want += t; });
  engine.submit(std::move(r));
  engine.run();
  EXPECT_EQ(result.stop_reason, st.stop_reason);
  EXPECT_EQ(static_cast<int>(result.tokens.size()), st.generated_tokens);
  if (st.stop_reason == "context") {
    EXPECT_EQ(result.tokens.size(), 3u);  // positions 10 and 11, then one more sampled
  }
}

TEST(Engine, CancelledRequestsEndAtTheNextStepAndFreeTheirBlocks) {
  const Model model = test_model();
  const LetterTokenizer tok;
  CpuExecutor ex(model, KvPages{4, 40}, 40, 1);
  Engine engine(ex, tok, {1, 8, 64, true});
  RequestResult running, waiting, kept;
  std::string kept_text;
  const uint64_t a = engine.submit(greedy({5, 6, 7}, 30, nullptr, &running));
  const uint64_t b = engine.submit(greedy({8, 9}, 30, nullptr, &waiting));
  engine.submit(greedy({10, 11, 12}, 5, &kept_text, &kept));
  engine.step();
  engine.step();
  EXPECT_GT(engine.stats().used_blocks, 0);
  engine.cancel(a);
  engine.cancel(b);
  engine.cancel(12345);  // unknown: ignored
  engine.step();
  EXPECT_EQ(running.stop_reason, "cancelled");
  EXPECT_EQ(waiting.stop_reason, "cancelled");
  EXPECT_TRUE(waiting.tokens.empty());
  engine.run();
  std::string want;
  CpuExecutor single(model, 40, 1);
  generate(single, tok, {10, 11, 12}, greedy({}, 5).options, [&](std::string_view t) { want += t; });
  EXPECT_EQ(kept_text, want);
  EXPECT_EQ(engine.stats().used_blocks, 0);
}

// Log-probabilities of generated and prompt tokens equal those of one
// forward() over the whole sequence, with chunked prompts, a batch and a cache
// small enough to preempt (a recomputed prompt keeps its first values).
TEST(Engine, LogprobsOfPromptAndGeneratedTokensMatchOneForwardOverTheSequence) {
  const Model model = test_model();
  const LetterTokenizer tok;
  CpuExecutor ex(model, KvPages{4, 14}, 40, 1);
  Engine engine(ex, tok, {8, 64, 16, true});
  std::vector<Request> requests = make_requests(14);
  std::vector<RequestResult> results(requests.size());
  std::vector<std::vector<int32_t>> streamed(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Request r = requests[i];
    r.logprobs = static_cast<int>(i % 3);
    r.prompt_logprobs = i % 2 ? 4 : -1;
    r.on_done = [&results, i](const RequestResult& res) { results[i] = res; };
    r.on_token = [&streamed, i](int32_t token, const TokenLogprobs* lp) {
      ASSERT_NE(lp, nullptr);
      EXPECT_EQ(lp->chosen.token, token);
      streamed[i].push_back(token);
    };
    engine.submit(std::move(r));
  }
  engine.run();
  EXPECT_GT(engine.stats().preemptions, 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestResult& res = results[i];
    EXPECT_EQ(streamed[i], res.tokens);
    ASSERT_EQ(res.logprobs.size(), res.tokens.size());
    std::vector<int32_t> seq = requests[i].prompt;
    seq.insert(seq.end(), res.tokens.begin(), res.tokens.end());
    CpuExecutor single(model, 40, 1);
    std::vector<float> logits;
    single.forward(seq, 0, true, logits);
    const size_t n = requests[i].prompt.size();
    auto expect_same = [&](const TokenLogprobs& got, size_t row, int top) {
      const TokenLogprobs want = token_logprobs(std::span(logits).subspan(row * kVocab, kVocab), seq[row + 1], top);
      EXPECT_EQ(got.chosen.token, want.chosen.token);
      EXPECT_NEAR(got.chosen.logprob, want.chosen.logprob, 1e-4);
      ASSERT_EQ(got.top.size(), want.top.size());
      for (size_t k = 0; k < want.top.size(); ++k) {
        EXPECT_EQ(got.top[k].token, want.top[k].token);
        EXPECT_NEAR(got.top[k].logprob, want.top[k].logprob, 1e-4);
      }
    };
    for (size_t t = 0; t < res.tokens.size(); ++t) expect_same(res.logprobs[t], n - 1 + t, static_cast<int>(i % 3));
    if (i % 2 == 0) {
      EXPECT_TRUE(res.prompt_logprobs.empty());
      continue;
    }
    ASSERT_EQ(res.prompt_logprobs.size(), n - 1) << "request " << i;
    for (size_t t = 0; t + 1 < n; ++t) expect_same(res.prompt_logprobs[t], t, 4);
  }
}

// A backend that samples on the device gives no logits: log-probabilities are refused.
class DeviceSamplingCpu : public CpuExecutor {
 public:
  using CpuExecutor::CpuExecutor;
  bool samples_on_device() const override { return true; }
};

TEST(Engine, RefusesLogprobsWhereTheBackendSamplesOnTheDevice) {
  const Model model = test_model();
  const LetterTokenizer tok;
  DeviceSamplingCpu ex(model, KvPages{4, 10}, 40, 1);
  Engine engine(ex, tok);
  Request r = greedy({3, 4}, 2);
  r.logprobs = 0;
  EXPECT_THROW(engine.submit(r), Error);
  r.logprobs = -1;
  r.prompt_logprobs = 1;
  EXPECT_THROW(engine.submit(r), Error);
  r.prompt_logprobs = kMaxTopLogprobs + 1;
  EXPECT_THROW(engine.submit(r), Error);
}

}  // namespace
}  // namespace fsvd
