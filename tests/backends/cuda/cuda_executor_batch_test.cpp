// CudaExecutor's batched steps: many sequences over one paged cache give each
// what it gets alone — logits against the CPU's step in fp32 mode, the
// engine's outputs against generate() on a one-sequence executor in bf16 —
// with sequences at their own positions, scattered blocks, prompt chunks
// beside decode rows and steps of more rows than one decode step takes.
#ifdef FLASHSVD_CUDA

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/decode_test_util.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "testing/byte_tokenizer.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::have_gpu;
using testutil::relative_error;

// "Hd64", "Hd80": GQA with low-rank and dense parts side by side (gate
// low-rank, up dense) and q/k/v biases; head_dim 64 (prompts through Prefill
// in bf16) or 80 (prompts as decode rows). "MhaStackedHd64": q, k, v and
// gate, up low-rank of one rank each, no biases: their second factors run as
// batched GEMMs (DevicePacked::stacked_second).
Model test_model(const std::string& name) {
  testing::RandomModelSpec spec;
  if (name == "MhaStackedHd64") {
    spec.config = testing::small_config(256, 520, 2, 4, 4, 64, 301, 128);
    spec.ranks = {24, 24, 24, 45, 33, 33, 29};
  } else {
    spec.config = testing::small_config(256, 520, 2, 8, 2, name == "Hd80" ? 80 : 64, 301, 128);
    spec.ranks = {37, 0, 21, 45, 33, 0, 29};
    spec.qkv_bias = true;
  }
  spec.seed = 21;
  return testing::random_model(spec);
}

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % 256);  // bytes of ByteTokenizer
  return t;
}

class CudaExecutorBatch : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// fp32 weights: each row's logits within `tolerance` of the CPU's step on
// the same slices, both caches fp32 or both fp8 (kv_fp8). With fp8, the
// GPU's cache takes a byte a value, and the CPU's fp32 cache lands further
// than the bound from the fp8 logits (so an fp32 cache could not pass).
void expect_steps_match_the_cpu(const std::string& name, bool kv_fp8, double tolerance) {
  const Model model = test_model(name);
  const int vocab = model.config.vocab, ctx = 64;
  const KvPages pages{16, 40};
  CpuExecutor cpu(model, pages, ctx, 0, kv_fp8), fp32_cache(model, pages, ctx, 0);
  CudaOptions options{ElementType::F32, GraphMode::model};
  options.kv_fp8 = kv_fp8;
  options.max_batch = 4;  // six sequences: two decode steps a wave
  CudaExecutor gpu(model, pages, ctx, options);
  EXPECT_EQ(gpu.stats().cache_bytes,
            size_t(2) * model.config.n_layers * pages.positions() * model.config.kv_dim() * (kv_fp8 ? 1 : 4));
  double fp8_effect = 0;  // the largest row distance between the CPU's fp8 and fp32 caches

  std::vector<int32_t> ids(pages.blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(5));
  const std::vector<int> lengths = {30, 1, 17, 40, 9, 25};
  std::vector<std::vector<int32_t>> tokens, blocks;
  for (size_t s = 0; s < lengths.size(); ++s) {
    tokens.push_back(random_tokens(lengths[s], 40 + s));
    blocks.emplace_back(ids.begin() + s * 6, ids.begin() + s * 6 + 6);
  }
  const std::vector<std::vector<std::pair<int, int>>> steps = {
      {{0, 12}, {2, 5}, {4, 1}},
      {{0, 17}, {1, 1}, {2, 1}, {3, 30}, {4, 1}, {5, 1}},
      {{0, 1}, {2, 1}, {3, 10}, {4, 7}, {5, 24}},
      {{2, 10}, {3, 0}},
  };
  std::vector<int> done(lengths.size(), 0);
  std::vector<float> want, got, plain;
  for (size_t k = 0; k < steps.size(); ++k) {
    std::vector<SeqSlice> batch;
    for (auto [s, rows] : steps[k]) {
      if (rows == 0) continue;
      batch.push_back({std::span(tokens[s]).subspan(done[s], rows), done[s], blocks[s],
                       k % 2 ? StepOutput::all : StepOutput::last});
    }
    cpu.step(batch, want);
    gpu.step(batch, got);
    ASSERT_EQ(got.size(), want.size()) << "step " << k;
    for (size_t r = 0; r < want.size() / vocab; ++r)
      EXPECT_LT(relative_error(got.data() + r * vocab, want.data() + r * vocab, vocab), tolerance)
          << "step " << k << " output row " << r;
    if (kv_fp8) {
      fp32_cache.step(batch, plain);
      for (size_t r = 0; r < want.size() / vocab; ++r)
        fp8_effect = std::max(fp8_effect, relative_error(plain.data() + r * vocab, want.data() + r * vocab, vocab));
    }
    for (auto [s, rows] : steps[k]) done[s] += rows;
  }
  if (kv_fp8) {
    EXPECT_GT(fp8_effect, 4 * tolerance);
  }
}

// The bound of the one-sequence fp32 test.
TEST_P(CudaExecutorBatch, Fp32StepsMatchTheCpuStep) { expect_steps_match_the_cpu(GetParam(), false, 1e-4); }

// An fp8 cache on both sides holds the same values (both round to nearest
// even) but where a k or v computed in another summation order sits within
// fp32 error of a rounding midpoint: one fp8 step (1/8 of that value) apart.
TEST_P(CudaExecutorBatch, Fp8CacheStepsMatchTheCpusFp8Cache) { expect_steps_match_the_cpu(GetParam(), true, 5e-3); }

// Requests of mixed lengths, more than one decode step takes; sampled ones
// (every other) only when `sampled`.
std::vector<Request> engine_requests(bool sampled) {
  std::mt19937 rng(9);
  std::vector<Request> requests;
  for (int i = 0; i < 7; ++i) {
    Request r;
    r.prompt = random_tokens(1 + static_cast<int>(rng() % 40), 100 + i);
    r.options.max_new_tokens = 10 + static_cast<int>(rng() % 30);
    if (sampled && i % 2) r.options.sampling = {0.8f, 20, 0.95f, 7u + i};
    requests.push_back(r);
  }
  return requests;
}

// Each request's generated tokens through an engine over `gpu`, all submitted at once.
std::vector<RequestResult> run_engine(CudaExecutor& gpu, const std::vector<Request>& requests,
                                      bool batch_invariant = false) {
  const testing::ByteTokenizer tok;
  Engine engine(gpu, tok, {8, 64, 24, true, batch_invariant});
  std::vector<RequestResult> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Request r = requests[i];
    r.on_done = [&results, i](const RequestResult& res) { results[i] = res; };
    engine.submit(std::move(r));
  }
  engine.run();
  EXPECT_EQ(engine.stats().used_blocks, 0);
  return results;
}

// The same requests one at a time on a one-sequence executor: the batch-1 path.
std::vector<RequestResult> run_alone(const Model& model, const std::vector<Request>& requests, CudaOptions options) {
  std::vector<RequestResult> out;
  for (const Request& r : requests) {
    CudaExecutor alone(model, 96, options);
    out.push_back(run_engine(alone, {r})[0]);
  }
  return out;
}

// fp32 weights: greedy and seeded requests sharing steps and a cache too
// small for all (preemptions) give exactly the tokens each gets alone, with
// an fp32 cache or an fp8 one (kv_fp8).
// (The GPU draws by seed and position, so a recomputed or batched request draws alike.)
void expect_fp32_requests_get_what_they_get_alone(const std::string& name, bool kv_fp8) {
  const Model model = test_model(name);
  const std::vector<Request> requests = engine_requests(true);
  CudaOptions options{ElementType::F32, GraphMode::model};
  options.kv_fp8 = kv_fp8;
  const std::vector<RequestResult> alone = run_alone(model, requests, options);
  options.max_batch = 4;
  CudaExecutor gpu(model, KvPages{16, 12}, 96, options);  // 192 positions for ~340: preemptions
  const std::vector<RequestResult> got = run_engine(gpu, requests);
  int preemptions = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(got[i].tokens, alone[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].stop_reason, alone[i].stop_reason) << "request " << i;
    preemptions += got[i].preemptions;
  }
  EXPECT_GT(preemptions, 0) << "the small cache should have forced preemptions";
}

TEST_P(CudaExecutorBatch, Fp32EngineRequestsGetWhatTheyGetAlone) {
  expect_fp32_requests_get_what_they_get_alone(GetParam(), false);
}

TEST_P(CudaExecutorBatch, Fp8CacheEngineRequestsGetWhatTheyGetAlone) {
  expect_fp32_requests_get_what_they_get_alone(GetParam(), true);
}

// bf16: steps of several rows run as GEMMs on bf16 activations, the batch-1
// path as GEMVs on fp32 ones, so greedy tokens agree until a near-tie: where
// they first part, the two tokens' fp32 logits (the CPU on the common prefix)
// are within bf16 error of each other (5% of the logits' RMS).
// With an fp8 cache (kv_fp8) the fp32 logits are the CPU's over an fp8 cache.
void expect_bf16_requests_agree_with_alone(const std::string& name, bool kv_fp8) {
  const Model model = test_model(name);
  const std::vector<Request> requests = engine_requests(false);
  CudaOptions options;
  options.kv_fp8 = kv_fp8;
  const std::vector<RequestResult> alone = run_alone(model, requests, options);
  options.max_batch = 4;
  CudaExecutor gpu(model, KvPages{16, 24}, 96, options);
  const std::vector<RequestResult> got = run_engine(gpu, requests);
  int identical = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::vector<int32_t>&a = got[i].tokens, &b = alone[i].tokens;
    size_t j = 0;
    while (j < a.size() && j < b.size() && a[j] == b[j]) ++j;
    if (j == a.size() && j == b.size()) {
      ++identical;
      continue;
    }
    ASSERT_TRUE(j < a.size() && j < b.size()) << "request " << i << " stopped early at token " << j;
    std::vector<int32_t> prefix = requests[i].prompt;
    prefix.insert(prefix.end(), b.begin(), b.begin() + static_cast<int64_t>(j));
    const int n = static_cast<int>(prefix.size());
    CpuExecutor cpu(model, KvPages::holding(n), n, 0, kv_fp8);
    std::vector<float> logits;
    cpu.forward(prefix, 0, false, logits);
    double ss = 0;
    for (float x : logits) ss += double{x} * x;
    const double rms = std::sqrt(ss / logits.size());
    EXPECT_LT(std::abs(logits[a[j]] - logits[b[j]]), 0.05 * rms)
        << "request " << i << " parts at token " << j << ": " << a[j] << " against " << b[j];
  }
  std::fprintf(stderr, "%d of %zu requests identical to the end\n", identical, requests.size());
}

TEST_P(CudaExecutorBatch, Bf16EngineRequestsAgreeWithAloneUpToNearTies) {
  expect_bf16_requests_agree_with_alone(GetParam(), false);
}

TEST_P(CudaExecutorBatch, Bf16Fp8CacheEngineRequestsAgreeWithAloneUpToNearTies) {
  expect_bf16_requests_agree_with_alone(GetParam(), true);
}

// Batch-invariant bf16: each decode row's logits are bitwise the logits of
// the same row run alone (a one-row step), for sequences at their own
// positions in steps of 4 rows and of 3 (bucket 4 with a padding row).
TEST_P(CudaExecutorBatch, Bf16BatchInvariantRowsAreBitwiseTheRowAlone) {
  const Model model = test_model(GetParam());
  const int vocab = model.config.vocab, ctx = 64;
  const KvPages pages{16, 28};
  CudaOptions options;
  options.max_batch = 4;  // seven sequences: a decode step of 4 rows, then one of 3
  options.batch_invariant = true;
  CudaExecutor together(model, pages, ctx, options), alone(model, pages, ctx, options);
  const std::vector<int> lengths = {9, 30, 1, 17, 3, 22, 5};
  std::vector<std::vector<int32_t>> tokens, blocks;
  for (size_t s = 0; s < lengths.size(); ++s) {
    tokens.push_back(random_tokens(lengths[s] + 12, 60 + s));
    blocks.push_back({static_cast<int32_t>(4 * s), static_cast<int32_t>(4 * s + 1), static_cast<int32_t>(4 * s + 2),
                      static_cast<int32_t>(4 * s + 3)});
  }
  std::vector<float> got, want, one;
  // Prompts one by one in both, then 12 decode steps of every sequence.
  for (size_t s = 0; s < lengths.size(); ++s) {
    const std::vector<SeqSlice> prompt = {{std::span(tokens[s]).first(lengths[s]), 0, blocks[s]}};
    together.step(prompt, got);
    alone.step(prompt, want);
  }
  for (int k = 0; k < 12; ++k) {
    std::vector<SeqSlice> batch;
    want.clear();
    for (size_t s = 0; s < lengths.size(); ++s) {
      const int pos = lengths[s] + k;
      batch.push_back({std::span(tokens[s]).subspan(pos, 1), pos, blocks[s]});
      alone.step(std::span(batch).last(1), one);
      want.insert(want.end(), one.begin(), one.end());
    }
    together.step(batch, got);
    ASSERT_EQ(got.size(), want.size());
    for (size_t s = 0; s < lengths.size(); ++s)
      EXPECT_EQ(std::memcmp(got.data() + s * vocab, want.data() + s * vocab, vocab * sizeof(float)), 0)
          << "step " << k << " sequence " << s;
  }
}

// Batch-invariant bf16 through the engine (prompt chunks fixed by position as
// well): greedy and seeded requests get the tokens each gets alone on the
// batch-1 path, where the default parts at near-ties (above); also with a
// cache too small for all, where preempted sequences are recomputed (their
// generated tokens re-read as decode rows).
TEST_P(CudaExecutorBatch, Bf16BatchInvariantRequestsGetWhatTheyGetAlone) {
  const Model model = test_model(GetParam());
  const std::vector<Request> requests = engine_requests(true);
  const std::vector<RequestResult> alone = run_alone(model, requests, CudaOptions{});
  CudaOptions options;
  options.max_batch = 4;
  options.batch_invariant = true;
  for (const int blocks : {24, 12}) {  // 384 positions, then 192 for ~340: preemptions
    CudaExecutor gpu(model, KvPages{16, blocks}, 96, options);
    const std::vector<RequestResult> got = run_engine(gpu, requests, true);
    int preemptions = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(got[i].tokens, alone[i].tokens) << blocks << " blocks, request " << i;
      EXPECT_EQ(got[i].stop_reason, alone[i].stop_reason) << blocks << " blocks, request " << i;
      preemptions += got[i].preemptions;
    }
    if (blocks == 12) {
      EXPECT_GT(preemptions, 0) << "the small cache should have forced preemptions";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaExecutorBatch, ::testing::Values("Hd64", "Hd80", "MhaStackedHd64"),
                         [](const auto& info) { return info.param; });

TEST(CudaExecutorBatchErrors, RefusesMalformedStepsAndLowRankKv) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const Model model = test_model("Hd64");
  CudaExecutor gpu(model, KvPages{16, 8}, 64, CudaOptions{});
  const std::vector<int32_t> five = {1, 2, 3, 4, 5}, b0 = {0}, b1 = {1}, b9 = {9};
  std::vector<float> logits;
  std::vector<int32_t> tokens;
  auto step = [&](std::vector<SeqSlice> batch) { gpu.step(batch, logits); };
  EXPECT_THROW(step({}), Error);
  EXPECT_THROW(step({{five, 0, b9}}), Error);               // block outside the cache
  EXPECT_THROW(step({{five, 0, b0}, {five, 0, b0}}), Error);  // one block written twice
  const std::vector<SeqSlice> two = {{five, 0, b0}, {five, 0, b1}};
  const std::vector<SamplingParams> one(1);
  EXPECT_THROW(gpu.step_sample(two, one, tokens), Error);  // a parameter set a sampled sequence
  std::vector<SamplingParams> bad(2);
  bad[1].top_p = 0;
  EXPECT_THROW(gpu.step_sample(two, bad, tokens), Error);
  gpu.step_sample(two, std::vector<SamplingParams>(2), tokens);
  EXPECT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0], tokens[1]);  // the same prompt, greedy
  CudaOptions lowrank;
  lowrank.kv = KvMode::lowrank;
  EXPECT_THROW(CudaExecutor(model, KvPages{16, 8}, 64, lowrank), Error);
  lowrank.kv_fp8 = true;  // an fp8 cache is a dense one
  EXPECT_THROW(CudaExecutor(model, 64, lowrank), Error);
  CudaOptions wide;
  wide.max_batch = kMaxDecodeRows + 1;
  EXPECT_THROW(CudaExecutor(model, KvPages{16, 8}, 64, wide), Error);
  CudaOptions wide_fp32{ElementType::F32, GraphMode::model};
  wide_fp32.max_batch = gemv_limits::kMaxBatch + 1;  // batched GEMVs take at most that many rows
  EXPECT_THROW(CudaExecutor(model, KvPages{16, 8}, 64, wide_fp32), Error);
  CudaOptions wide_invariant;
  wide_invariant.batch_invariant = true;
  wide_invariant.max_batch = gemv_limits::kMaxBatch + 1;
  EXPECT_THROW(CudaExecutor(model, KvPages{16, 8}, 64, wide_invariant), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
