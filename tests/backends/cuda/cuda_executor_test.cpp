// CudaExecutor against the fp32 CpuExecutor on random models covering every
// path of the decode step: MHA and GQA (a group of 7 too), head_dim 64 and
// 128 (and 80 and 256, whose prompts run as decode steps), low-rank
// projections of odd and unequal ranks, dense parts mixed in (differently in
// every layer, as budgeted compression leaves them), shared first factors,
// q/k/v biases, tied and (low-rank) untied lm_heads. Also the bytes the
// upload de-duplicates and the Errors for unsupported requests. The GPU parts
// skip when no device is present.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/cuda_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/decode_test_util.h"
#include "testing/fails_with.h"
#include "model/synthetic.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::have_gpu;
using testutil::relative_error;
using testing::RandomModelSpec;

// bf16 weights (8 bits of mantissa) through a few layers of factor chains.
constexpr double kLogitTolerance = 2e-2;

int argmax(const float* v, int n) { return static_cast<int>(std::max_element(v, v + n) - v); }

// Gap between the two largest values, relative to the values' RMS.
double top2_margin(const std::vector<float>& v) {
  std::vector<float> s(v);
  std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<>());
  double ss = 0;
  for (float x : v) ss += double{x} * x;
  return (s[0] - s[1]) / std::sqrt(ss / v.size());
}

struct Case {
  std::string name;
  RandomModelSpec spec;
};

std::vector<Case> cases() {
  auto spec = [](ModelConfig c, testing::Ranks r, bool bias, int share, int lm_rank, uint64_t seed) {
    RandomModelSpec s;
    s.config = c;
    s.ranks = r;
    s.qkv_bias = bias;
    s.share_group = share;
    s.lm_head_rank = lm_rank;
    s.seed = seed;
    return s;
  };
  ModelConfig mha = testing::small_config(196, 340, 2, 3, 3, 64, 301);
  mha.tied_embeddings = true;  // hidden 196: the tied lm_head needs its own padded upload
  ModelConfig gqa3 = testing::small_config(256, 520, 3, 6, 2, 128, 257);
  ModelConfig gqa4 = testing::small_config(264, 456, 4, 8, 2, 64, 333);
  ModelConfig gqa4_128 = testing::small_config(320, 392, 4, 4, 1, 128, 280);
  gqa4_128.tied_embeddings = true;
  ModelConfig gqa7_80 = testing::small_config(224, 300, 2, 7, 1, 80, 263);
  ModelConfig gqa2_256 = testing::small_config(192, 280, 2, 4, 2, 256, 271);
  // What a budgeted compression makes: each layer its own mix (one all dense;
  // packed groups of dense and low-rank parts of unequal ranks; o and down
  // dense in some layers; gate|up stacked in one layer only).
  RandomModelSpec budgeted = spec(gqa4, {}, true, 1, 0, 17);
  budgeted.layer_ranks = {{0, 0, 0, 0, 0, 0, 0},
                          {40, 0, 0, 0, 0, 61, 37},
                          {23, 19, 0, 45, 51, 0, 0},
                          {0, 11, 29, 33, 47, 47, 41}};
  return {
      // All low-rank, gate and up of one rank: one stacked gate|up second factor.
      {"MhaLowRankHd64TiedBias", spec(mha, {37, 21, 29, 45, 51, 51, 43}, true, 1, 0, 11)},
      // Dense q, v, o, up, down beside low-rank k, gate: a dense part beside a low-rank one.
      {"Gqa3MixedHd128Bias", spec(gqa3, {0, 19, 0, 0, 33, 0, 0}, true, 1, 0, 12)},
      // Shared first factors, unequal gate/up ranks, low-rank lm_head.
      {"Gqa4SharedHd64LowRankHead", spec(gqa4, {45, 23, 31, 57, 61, 53, 39}, false, 2, 27, 13)},
      // Shared first factors with the stacked gate|up, tied lm_head.
      {"Gqa4SharedFusedHd128Tied", spec(gqa4_128, {29, 13, 17, 35, 47, 47, 41}, true, 2, 0, 14)},
      // Head sizes prefill attention does not take; a group of 7 query heads (8 a CTA).
      {"Gqa7Hd80", spec(gqa7_80, {33, 17, 19, 41, 37, 37, 29}, false, 1, 0, 15)},
      {"Gqa2Hd256Bias", spec(gqa2_256, {0, 21, 27, 0, 31, 35, 0}, true, 1, 0, 16)},
      {"Gqa4BudgetedLayersHd64Bias", budgeted},
      // q, k, v of one rank and no biases: one batched GEMM of stacked second factors.
      {"MhaStackedQkvHd64", spec(mha, {24, 24, 24, 45, 51, 51, 43}, false, 1, 0, 18)},
  };
}

class CudaExecutorVsCpu : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// Prompt (all logits) then decode steps fed the CPU's greedy tokens: every
// step's logits within bf16 tolerance.
TEST_P(CudaExecutorVsCpu, LogitsMatchAtEveryStep) {
  const Model m = testing::random_model(GetParam().spec);
  const int context = 24;
  CpuExecutor cpu(m, context, 0);
  CudaExecutor gpu(m, context);
  const int vocab = m.config.vocab;
  const std::vector<int32_t> prompt{3, 250, 17, 99, 4, 180, 42};
  std::vector<float> want, got;
  cpu.forward(prompt, 0, true, want);
  gpu.forward(prompt, 0, true, got);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const double err = relative_error(got.data() + i * vocab, want.data() + i * vocab, vocab);
    worst = std::max(worst, err);
    EXPECT_LT(err, kLogitTolerance) << "prompt token " << i;
  }
  int pos = static_cast<int>(prompt.size());
  int32_t token = argmax(want.data() + (prompt.size() - 1) * vocab, vocab);
  for (int step = 0; step < 8; ++step, ++pos) {
    cpu.forward({&token, 1}, pos, false, want);
    gpu.forward({&token, 1}, pos, false, got);
    const double err = relative_error(got, want);
    worst = std::max(worst, err);
    EXPECT_LT(err, kLogitTolerance) << "decode step " << step;
    token = argmax(want.data(), vocab);
  }
  std::printf("[ %s ] worst relative logit error %.2e, %zu weight bytes\n", GetParam().name.c_str(),
              worst, gpu.stats().weight_bytes);
}

// Independent greedy runs agree token for token; a step where the CPU's top
// two logits are a near-tie (within bf16 noise) may legitimately diverge, and
// ends the comparison there.
TEST_P(CudaExecutorVsCpu, GreedyTokensAgree) {
  const Model m = testing::random_model(GetParam().spec);
  CpuExecutor cpu(m, 32, 0);
  CudaExecutor gpu(m, 32);
  const std::vector<int32_t> prompt{7, 1, 77, 200};
  std::vector<float> want, got;
  cpu.forward(prompt, 0, false, want);
  gpu.forward(prompt, 0, false, got);
  int32_t cpu_token = 0, gpu_token = 0;
  for (int step = 0, pos = static_cast<int>(prompt.size()); step < 12; ++step, ++pos) {
    cpu_token = argmax(want.data(), m.config.vocab);
    gpu_token = argmax(got.data(), m.config.vocab);
    if (cpu_token != gpu_token) {
      EXPECT_LT(top2_margin(want), 0.05) << "step " << step << ": cpu " << cpu_token << ", gpu "
                                         << gpu_token << " without a near-tie";
      return;
    }
    cpu.forward({&cpu_token, 1}, pos, false, want);
    gpu.forward({&gpu_token, 1}, pos, false, got);
  }
}

// fp32 weights and cache: the same arithmetic as the CPU up to summation
// order, so logits agree to 1e-4 at every prompt and decode step.
TEST_P(CudaExecutorVsCpu, Fp32ModeMatchesTightly) {
  const Model m = testing::random_model(GetParam().spec);
  CpuExecutor cpu(m, 16, 0);
  CudaExecutor gpu(m, 16, CudaOptions{ElementType::F32, GraphMode::model});
  const std::vector<int32_t> prompt{5, 60, 7, 130, 2};
  std::vector<float> want, got;
  cpu.forward(prompt, 0, true, want);
  gpu.forward(prompt, 0, true, got);
  const int vocab = m.config.vocab;
  for (size_t i = 0; i < prompt.size(); ++i)
    EXPECT_LT(relative_error(got.data() + i * vocab, want.data() + i * vocab, vocab), 1e-4) << "prompt " << i;
  int32_t token = argmax(want.data() + (prompt.size() - 1) * vocab, vocab);
  for (int pos = static_cast<int>(prompt.size()); pos < 12; ++pos) {
    cpu.forward({&token, 1}, pos, false, want);
    gpu.forward({&token, 1}, pos, false, got);
    EXPECT_LT(relative_error(got, want), 1e-4) << "position " << pos;
    token = argmax(want.data(), vocab);
  }
}

// The prompt in one prefill (GEMMs, flash attention) against the same tokens
// one decode step at a time; decoding after either continues alike.
TEST_P(CudaExecutorVsCpu, PrefillMatchesDecodeSteps) {
  const Model m = testing::random_model(GetParam().spec);
  const int vocab = m.config.vocab, n = 37;
  CudaExecutor batched(m, 48), stepped(m, 48);
  std::vector<int32_t> prompt(n);
  for (int i = 0; i < n; ++i) prompt[i] = (i * 37 + 11) % vocab;
  std::vector<float> want, got, row;
  batched.forward(prompt, 0, true, got);
  for (int i = 0; i < n; ++i) {
    stepped.forward({&prompt[i], 1}, i, false, row);
    EXPECT_LT(relative_error(got.data() + i * vocab, row.data(), vocab), kLogitTolerance) << "token " << i;
  }
  // A second chunk at pos > 0 attends to the first one's cache.
  const std::vector<int32_t> more{4, 8, 15};
  batched.forward(more, n, false, got);
  for (int i = 0; i < 3; ++i) stepped.forward({&more[i], 1}, n + i, false, want);
  EXPECT_LT(relative_error(got, want), kLogitTolerance);
}

INSTANTIATE_TEST_SUITE_P(Models, CudaExecutorVsCpu, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// ---- Upload: bytes, with shared storage counted once. ----

int64_t pad8(int64_t n) { return (n + 7) / 8 * 8; }

// The layout DeviceModel promises for an all-low-rank model with an untied
// dense lm_head and no sharing: bf16 matrices with rows padded to 8, fp32
// norms. Written from the shapes, not from the model.
size_t expected_unshared_bytes(const RandomModelSpec& s) {
  const ModelConfig& c = s.config;
  const testing::Ranks& r = s.ranks;
  const int64_t h = c.hidden, q_out = int64_t{c.n_heads} * c.head_dim,
                kv = int64_t{c.n_kv_heads} * c.head_dim, in = c.intermediate;
  // Every matrix: rows rounded up to 8, columns padded to 8; a packed first
  // factor starts each part at a multiple of 8 rows.
  auto m = [](int64_t rows, int64_t cols) { return pad8(rows) * pad8(cols); };
  const int64_t qkv_rows = pad8(r.q) + pad8(r.k) + pad8(r.v), gate_up_rows = pad8(r.gate) + pad8(r.up);
  int64_t bf16 = pad8(c.vocab) * h + m(c.vocab, h);  // embed (row stride hidden), lm_head
  int64_t f32 = h;                               // final norm
  for (int l = 0; l < c.n_layers; ++l) {
    f32 += 2 * h;
    bf16 += m(qkv_rows, h) + m(q_out, r.q) + m(kv, r.k) + m(kv, r.v);
    bf16 += m(r.o, q_out) + m(h, r.o);
    // Equal gate and up ranks: one stacked [gate; up] second factor.
    bf16 += m(gate_up_rows, h) + (r.gate == r.up ? m(2 * in, r.gate) : m(in, r.gate) + m(in, r.up));
    bf16 += m(r.down, in) + m(h, r.down);
  }
  return static_cast<size_t>(2 * bf16 + 4 * f32);
}

TEST(CudaExecutorUpload, SharedStorageIsUploadedOnce) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  RandomModelSpec spec;
  spec.config = testing::small_config(196, 300, 4, 4, 2, 64, 211);
  spec.ranks = {21, 13, 19, 23, 29, 29, 31};
  spec.seed = 5;
  const size_t unshared = expected_unshared_bytes(spec);
  EXPECT_EQ(CudaExecutor(testing::random_model(spec), 8).stats().weight_bytes, unshared);

  // Groups of 2 layers share q/k/v and gate/up first factors: the packed first
  // factors of 2 of the 4 layers are not uploaded again.
  spec.share_group = 2;
  const testing::Ranks& r = spec.ranks;
  const size_t saved =
      2 * 2 * (pad8(r.q) + pad8(r.k) + pad8(r.v) + pad8(r.gate) + pad8(r.up)) * pad8(spec.config.hidden);
  EXPECT_EQ(CudaExecutor(testing::random_model(spec), 8).stats().weight_bytes, unshared - saved);

  // A tied lm_head is the embedding's upload when hidden is a multiple of 8.
  spec.share_group = 1;
  spec.config = testing::small_config(200, 300, 4, 4, 2, 64, 211);
  const size_t untied = expected_unshared_bytes(spec);
  spec.config.tied_embeddings = true;
  EXPECT_EQ(CudaExecutor(testing::random_model(spec), 8).stats().weight_bytes,
            untied - size_t{2} * pad8(211) * 200);
}

// ---- Graph modes and synthetic models ----

TEST(CudaExecutorGraphs, EveryModeGivesTheSameLogits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const Model m = testing::random_model(cases()[2].spec);
  std::vector<std::vector<float>> runs;
  for (GraphMode mode : {GraphMode::none, GraphMode::layer, GraphMode::model}) {
    CudaExecutor gpu(m, 16, CudaOptions{ElementType::BF16, mode});
    std::vector<float> logits, all;
    for (int pos = 0; pos < 10; ++pos) {
      const int32_t token = (pos * 29 + 3) % m.config.vocab;
      gpu.forward({&token, 1}, pos, false, logits);
      all.insert(all.end(), logits.begin(), logits.end());
    }
    const ExecutorStats st = gpu.stats();
    EXPECT_GT(st.kernels_per_token, 4 * m.config.n_layers);
    const int launches[] = {st.kernels_per_token + 1, m.config.n_layers + 2, 1};  // + the logits copy
    EXPECT_EQ(st.launches_per_token, launches[static_cast<int>(mode)]) << graph_mode_name(mode);
    EXPECT_EQ(st.capture_ms > 0, mode != GraphMode::none);
    runs.push_back(std::move(all));
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

// forward_next picks the token on the device: greedy equals the argmax of
// forward()'s logits (graph and plain launches, after a prefill and after
// decode steps); a sampled run is reproducible from its seed and stays in
// the vocabulary.
TEST(CudaExecutorSampling, ForwardNextMatchesHostArgmaxAndIsSeeded) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const Model m = testing::random_model(cases()[1].spec);
  const int vocab = m.config.vocab;
  const std::vector<int32_t> prompt{9, 8, 7, 6, 5};
  for (GraphMode mode : {GraphMode::none, GraphMode::model}) {
    CudaExecutor by_logits(m, 32, CudaOptions{ElementType::BF16, mode});
    CudaExecutor by_device(m, 32, CudaOptions{ElementType::BF16, mode});
    std::vector<float> logits;
    by_logits.forward(prompt, 0, false, logits);
    int32_t want = argmax(logits.data(), vocab);
    int32_t got = by_device.forward_next(prompt, 0, SamplingParams{});
    for (int pos = 5; pos < 15; ++pos) {
      ASSERT_EQ(got, want) << graph_mode_name(mode) << " position " << pos;
      by_logits.forward({&want, 1}, pos, false, logits);
      want = argmax(logits.data(), vocab);
      got = by_device.forward_next({&got, 1}, pos, SamplingParams{});
    }
  }
  auto sampled_run = [&](uint64_t seed) {
    CudaExecutor gpu(m, 32);
    const SamplingParams p{1.0f, 50, 0.95f, seed};
    std::vector<int32_t> out{gpu.forward_next(prompt, 0, p)};
    for (int pos = 5; pos < 20; ++pos) out.push_back(gpu.forward_next({&out.back(), 1}, pos, p));
    return out;
  };
  const std::vector<int32_t> a = sampled_run(3), b = sampled_run(3), c = sampled_run(4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int32_t t : a) EXPECT_TRUE(t >= 0 && t < vocab);
}

// The sampling parameters live in device memory, so the graphs captured for
// the first step follow them when they change at every step: greedy steps
// pick the argmax of forward()'s logits, sampled ones draw elsewhere too.
TEST(CudaExecutorSampling, ParamsMayChangeAtEveryStep) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const Model m = testing::random_model(cases()[1].spec);
  const int vocab = m.config.vocab;
  const std::vector<int32_t> prompt{9, 8, 7, 6, 5};
  for (GraphMode mode : {GraphMode::layer, GraphMode::model}) {
    CudaExecutor by_logits(m, 32, CudaOptions{ElementType::BF16, mode});
    CudaExecutor by_device(m, 32, CudaOptions{ElementType::BF16, mode});
    std::vector<float> logits;
    by_logits.forward(prompt, 0, false, logits);
    int32_t token = by_device.forward_next(prompt, 0, SamplingParams{});
    ASSERT_EQ(token, argmax(logits.data(), vocab));
    int drawn_elsewhere = 0;
    for (int pos = 5; pos < 25; ++pos) {
      const bool greedy = pos % 2 == 1;
      const SamplingParams p = greedy ? SamplingParams{} : SamplingParams{1.0f, 0, 1.0f, 7};
      by_logits.forward({&token, 1}, pos, false, logits);
      token = by_device.forward_next({&token, 1}, pos, p);
      ASSERT_TRUE(token >= 0 && token < vocab) << token;
      const int32_t best = argmax(logits.data(), vocab);
      if (greedy)
        EXPECT_EQ(token, best) << graph_mode_name(mode) << " position " << pos;
      else
        drawn_elsewhere += token != best;
    }
    EXPECT_GT(drawn_elsewhere, 0) << graph_mode_name(mode) << ": sampled steps all took the argmax";
  }
}

// A logits step between sampling ones leaves the sampling parameters on the
// device as the host last sent them: greedy steps after a sampled one and a
// logits step pick the argmax of forward()'s logits.
TEST(CudaExecutorSampling, LogitsStepKeepsTheSamplingParams) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const Model m = testing::random_model(cases()[1].spec);
  const int vocab = m.config.vocab;
  const std::vector<int32_t> prompt{9, 8, 7, 6, 5}, blocks{0, 1};
  CudaExecutor by_logits(m, 32);
  CudaExecutor gpu(m, 32);
  gpu.forward_next(prompt, 0, SamplingParams{1.0f, 0, 1.0f, 7});
  const SeqSlice slice{std::span(prompt).first(1), 0, blocks};
  std::vector<float> logits;
  gpu.step({&slice, 1}, logits);
  by_logits.forward(prompt, 0, false, logits);
  int32_t want = argmax(logits.data(), vocab);
  int32_t got = gpu.forward_next(prompt, 0, SamplingParams{});
  for (int pos = 5; pos < 15; ++pos) {
    ASSERT_EQ(got, want) << "position " << pos;
    by_logits.forward({&want, 1}, pos, false, logits);
    want = argmax(logits.data(), vocab);
    got = gpu.forward_next({&got, 1}, pos, SamplingParams{});
  }
}

// A decode stream hands the tokens forward_next steps give, stops where its
// callback says (or after `count`), leaves the cache at the tokens run (a
// forward_next after the stop continues as the unstopped run does), and
// greets bad requests with errors.
TEST(CudaExecutorSampling, DecodeStreamEqualsForwardNextStepsAndStopsWhereTold) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const Model m = testing::random_model(cases()[1].spec);
  const std::vector<int32_t> prompt{9, 8, 7, 6, 5};
  const int pos0 = static_cast<int>(prompt.size());
  for (GraphMode mode : {GraphMode::none, GraphMode::layer, GraphMode::model}) {
    for (const SamplingParams& p : {SamplingParams{}, SamplingParams{0.8f, 40, 0.9f, 11}}) {
      SCOPED_TRACE(std::string(graph_mode_name(mode)) + " temperature " + std::to_string(p.temperature));
      CudaExecutor stepwise(m, 32, CudaOptions{ElementType::BF16, mode});
      std::vector<int32_t> want{stepwise.forward_next(prompt, 0, p)};
      for (int pos = pos0; pos < pos0 + 12; ++pos) want.push_back(stepwise.forward_next({&want.back(), 1}, pos, p));

      CudaExecutor streamed(m, 32, CudaOptions{ElementType::BF16, mode});
      std::vector<int32_t> got{streamed.forward_next(prompt, 0, p)};
      auto collect = [&](int32_t t) {
        got.push_back(t);
        return true;
      };
      EXPECT_EQ(streamed.decode_stream(got.back(), pos0, 6, p, collect), 6);
      // Stopped by the callback after 3 more, with one step queued past the stop.
      int left = 3;
      const int handed = streamed.decode_stream(got.back(), pos0 + 6, 20, p, [&](int32_t t) {
        got.push_back(t);
        return --left > 0;
      });
      EXPECT_EQ(handed, 3);
      got.push_back(streamed.forward_next({&got.back(), 1}, pos0 + 9, p));
      got.push_back(streamed.forward_next({&got.back(), 1}, pos0 + 10, p));
      got.push_back(streamed.forward_next({&got.back(), 1}, pos0 + 11, p));
      EXPECT_EQ(got, want);
    }
  }
  CudaExecutor gpu(m, 16);
  const int32_t first = gpu.forward_next(prompt, 0, SamplingParams{});
  auto any = [](int32_t) { return true; };
  EXPECT_THROW(gpu.decode_stream(first, pos0, 0, SamplingParams{}, any), Error);
  EXPECT_THROW(gpu.decode_stream(first, pos0, 12, SamplingParams{}, any), Error);  // past the context
  EXPECT_THROW(gpu.decode_stream(first, pos0 + 1, 2, SamplingParams{}, any), Error);  // a gap in the cache
  EXPECT_THROW(gpu.decode_stream(-1, pos0, 2, SamplingParams{}, any), Error);
  EXPECT_EQ(gpu.decode_stream(first, pos0, 11, SamplingParams{}, any), 11);  // up to the last position
}

// Unpacked launches (the ablation) compute the same step: one launch per part
// reads the same rows, so only the GEMVs' launch shapes (split-K order) differ.
TEST(CudaExecutorGraphs, PackOffMatchesPackOn) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const Case& k : cases()) {
    const Model m = testing::random_model(k.spec);
    CudaOptions off;
    off.pack = false;
    CudaExecutor packed(m, 16), unpacked(m, 16, off);
    EXPECT_GT(unpacked.stats().kernels_per_token, packed.stats().kernels_per_token) << k.name;
    std::vector<float> a, b;
    for (int pos = 0; pos < 6; ++pos) {
      const int32_t token = (pos * 31 + 5) % m.config.vocab;
      packed.forward({&token, 1}, pos, false, a);
      unpacked.forward({&token, 1}, pos, false, b);
      EXPECT_LT(relative_error(b, a), 1e-5) << k.name << " position " << pos;
    }
  }
}

// Weights generated on the device are the host synthetic model's, bit for bit:
// the same logits from both, and within bf16 tolerance of the CPU.
TEST(CudaExecutorSynthetic, DeviceBuiltModelEqualsUploadedHostModel) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto& [keep, spread] : {std::pair{0.4, 0.0}, std::pair{0.4, 0.5}, std::pair{1.0, 0.0}}) {
    SyntheticSpec spec;
    spec.name = "test";
    spec.config = testing::small_config(264, 520, 3, 6, 2, 128, 301);
    spec.keep = keep;
    spec.rank_spread = spread;  // unequal ranks across layers and matrices
    spec.seed = 9;
    const Model host = make_synthetic_model(spec);
    CudaExecutor built(std::make_shared<const DeviceModel>(spec), 12), uploaded(host, 12);
    CpuExecutor cpu(host, 12, 0);
    EXPECT_EQ(built.stats().weight_bytes, uploaded.stats().weight_bytes);
    const std::vector<int32_t> prompt{1, 100, 300, 42};
    std::vector<float> a, b, c;
    built.forward(prompt, 0, true, a);
    uploaded.forward(prompt, 0, true, b);
    cpu.forward(prompt, 0, true, c);
    EXPECT_EQ(a, b) << "keep " << keep;
    EXPECT_LT(relative_error(a, c), kLogitTolerance) << "keep " << keep;
  }
}

// ---- The low-rank KV cache ----

// --kv lowrank computes the same model as the dense cache: prompt chunks (the
// second one at pos > 0 attends to rows rebuilt from rank space) and decode
// steps within bf16 tolerance of the CPU, in every graph mode; the graph
// modes bitwise equal. Models whose k and v are both factorized (cases 0, 2, 3).
TEST(CudaExecutorLowRankKv, MatchesTheCpuInEveryGraphMode) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::vector<Case> all = cases();
  for (int index : {0, 2, 3}) {
    const Case& k = all[index];
    const Model m = testing::random_model(k.spec);
    const int vocab = m.config.vocab, context = 24;
    const std::vector<int32_t> first{3, 250, 17, 99, 4}, second{180, 42, 7};
    CpuExecutor cpu(m, context, 0);
    std::vector<float> want_first, want_second, want;
    cpu.forward(first, 0, true, want_first);
    cpu.forward(second, 5, true, want_second);
    std::vector<std::vector<float>> steps_by_mode;
    for (GraphMode mode : {GraphMode::none, GraphMode::layer, GraphMode::model}) {
      CudaOptions options{ElementType::BF16, mode};
      options.kv = KvMode::lowrank;
      CudaExecutor gpu(m, context, options);
      const std::string what = k.name + " graph " + graph_mode_name(mode);
      std::vector<float> got;
      gpu.forward(first, 0, true, got);
      EXPECT_LT(relative_error(got, want_first), kLogitTolerance) << what << " first chunk";
      gpu.forward(second, 5, true, got);
      EXPECT_LT(relative_error(got, want_second), kLogitTolerance) << what << " second chunk";
      // Decode steps fed the CPU's greedy tokens (its cache is at 8 positions too).
      CpuExecutor ref(m, context, 0);
      ref.forward(first, 0, false, want);
      ref.forward(second, 5, false, want);
      std::vector<float> steps;
      for (int pos = 8; pos < 16; ++pos) {
        const int32_t token = argmax(want.data(), vocab);
        ref.forward({&token, 1}, pos, false, want);
        gpu.forward({&token, 1}, pos, false, got);
        EXPECT_LT(relative_error(got, want), kLogitTolerance) << what << " position " << pos;
        steps.insert(steps.end(), got.begin(), got.end());
      }
      EXPECT_GT(gpu.stats().cache_bytes, 0u);
      steps_by_mode.push_back(std::move(steps));
    }
    EXPECT_EQ(steps_by_mode[0], steps_by_mode[1]) << k.name;
    EXPECT_EQ(steps_by_mode[0], steps_by_mode[2]) << k.name;
  }
}

TEST(CudaExecutorLowRankKv, NeedsFactorizedKvAndBf16) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  CudaOptions options;
  options.kv = KvMode::lowrank;
  // Case 1 has a dense v projection.
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(testing::random_model(cases()[1].spec), 8, options); },
                               "dense k or v"));
  options.weights = ElementType::F32;
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(testing::random_model(cases()[0].spec), 8, options); },
                               "bf16"));
  EXPECT_TRUE(test::fails_with([] { parse_kv_mode("sparse"); }, "--kv"));
}

// ---- Errors ----

TEST(CudaExecutorErrors, UnsupportedHeadDimIsRefusedBeforeTouchingTheDevice) {
  RandomModelSpec spec;
  spec.config = testing::small_config(64, 96, 1, 2, 2, 32, 50);
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(testing::random_model(spec), 8); }, "head_dim 32"));
}

TEST(CudaExecutorErrors, BadRequests) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  RandomModelSpec spec;
  spec.config = testing::small_config(128, 200, 2, 2, 2, 64, 90);
  spec.ranks.q = 11;
  const Model m = testing::random_model(spec);
  // 2 layers x 2^30 positions x 128 values x 2 (k, v) x 2 bytes = 1 TiB.
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(m, 1 << 30); }, "KV cache"));
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(m, 0); }, "context size"));
  RandomModelSpec unpacked = spec;
  unpacked.pack = false;
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(testing::random_model(unpacked), 8); },
                               "not packed"));

  CudaExecutor gpu(m, 8);
  std::vector<float> logits;
  const std::vector<int32_t> three{1, 2, 3};
  EXPECT_TRUE(test::fails_with([&] { gpu.forward(three, 1, false, logits); }, "position 1"));
  EXPECT_TRUE(test::fails_with([&] { gpu.forward({}, 0, false, logits); }, "no tokens"));
  const std::vector<int32_t> bad{1, 90};
  EXPECT_TRUE(test::fails_with([&] { gpu.forward(bad, 0, false, logits); }, "token id 90"));
  gpu.forward(three, 0, false, logits);
  const std::vector<int32_t> six(6, 5);
  EXPECT_TRUE(test::fails_with([&] { gpu.forward(six, 3, false, logits); }, "context size 8"));
  EXPECT_TRUE(test::fails_with([&] { gpu.forward(three, 4, false, logits); }, "position 4"));
  // Rewinding to an earlier position is allowed and overwrites the cache.
  gpu.forward(three, 1, true, logits);
  EXPECT_EQ(logits.size(), size_t{3} * 90);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
