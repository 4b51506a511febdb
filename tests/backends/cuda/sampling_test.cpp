// What the op table (backends/op_table) does not check of cuda::sample_tokens:
// ties at the cut keep the lowest ids, draws follow the kept probabilities, a
// step and the seed key the draw, a row of a batch picks what it picks alone,
// a captured graph follows the parameters and steps in device memory,
// non-finite logits, and the arguments it refuses.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "backends/op_table/sampling_reference.h"
#include "core/error.h"
#include "runtime/sampler.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

class CudaSampling : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// One row of logits, sampled as a batch of one.
struct DeviceRow {
  explicit DeviceRow(const std::vector<float>& logits) : n(logits.size()), logits(n), kept(n) {
    this->logits.upload(logits);
  }
  int64_t n;
  DeviceBuffer<float> logits;
  DeviceBuffer<uint8_t> kept;
  DeviceBuffer<int32_t> step{1}, token{1};
  DeviceBuffer<SamplingParams> params{1};

  int32_t sample(const SamplingParams& c, int32_t at_step = 0) {
    params.upload(std::vector<SamplingParams>{c});
    step.upload(std::vector<int32_t>{at_step});
    FSVD_CUDA_CHECK(cudaMemset(token.data(), 0xff, sizeof(int32_t)));
    sample_tokens(logits.data(), 1, n, n, params.data(), step.data(), token.data(), nullptr);
    return token.download()[0];
  }
  std::vector<uint8_t> kept_set(const SamplingParams& c) {
    params.upload(std::vector<SamplingParams>{c});
    FSVD_CUDA_CHECK(cudaMemset(kept.data(), 0xff, kept.bytes()));
    sample_tokens(logits.data(), 1, n, n, params.data(), step.data(), token.data(), nullptr, kept.data());
    return kept.download();
  }
  // One draw for each step in [first, first + count), launched back to back.
  std::vector<int32_t> draws(const SamplingParams& c, int first, int count) {
    params.upload(std::vector<SamplingParams>{c});
    std::vector<int32_t> steps(count);
    std::iota(steps.begin(), steps.end(), first);
    DeviceBuffer<int32_t> dsteps(count), tokens(count);
    dsteps.upload(steps);
    FSVD_CUDA_CHECK(cudaMemset(tokens.data(), 0xff, tokens.bytes()));
    for (int i = 0; i < count; ++i)
      sample_tokens(logits.data(), 1, n, n, params.data(), dsteps.data() + i, tokens.data() + i, nullptr);
    return tokens.download();
  }
};

// Gaussian logits; on a coarse grid when `ties`, so cuts often split equal logits.
std::vector<float> random_logits(int64_t n, uint64_t seed, float stddev, bool ties) {
  std::vector<float> l = fsvd::testing::random_normal(n, seed, stddev);
  if (ties)
    for (float& x : l) x = std::round(x * 4) / 4;
  return l;
}

// Compares the device's kept set with the CPU's (tokens at a rounding-level
// top-p tie skipped), and draws with it.
void expect_cpu_kept_set(DeviceRow& row, const std::vector<float>& l, const SamplingParams& c, const char* what) {
  const optable::KeptSet ref = optable::cpu_kept_set(l, c);
  const std::vector<uint8_t> got = row.kept_set(c);
  int mismatches = 0;
  for (int64_t i = 0; i < row.n; ++i) {
    if (ref.kept[i] != optable::Kept::kEither && got[i] != (ref.kept[i] == optable::Kept::kIn ? 1 : 0) &&
        ++mismatches <= 3) {
      ADD_FAILURE() << what << " n " << row.n << " T " << c.temperature << " k " << c.top_k
                    << " p " << c.top_p << ": token " << i << " kept " << int{got[i]};
    }
  }
  EXPECT_EQ(mismatches, 0) << what << " n " << row.n << " T " << c.temperature << " k "
                           << c.top_k << " p " << c.top_p;
  for (int32_t t : row.draws(c, 0, 16))
    EXPECT_TRUE(t >= 0 && t < row.n && got[t] == 1) << what << " drew " << t << " n " << row.n;
}

TEST_F(CudaSampling, TiesAtTheCutKeepTheLowestIds) {
  DeviceRow flat(std::vector<float>(300, 0.25f));
  auto kept_ids = [&](const SamplingParams& c) {
    const std::vector<uint8_t> kept = flat.kept_set(c);
    std::vector<int> ids;
    for (int i = 0; i < 300; ++i)
      if (kept[i]) ids.push_back(i);
    return ids;
  };
  auto first = [](int count) {
    std::vector<int> ids(count);
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  };
  EXPECT_EQ(kept_ids({1.0f, 7, 1.0f, 0}), first(7));
  EXPECT_EQ(kept_ids({1.0f, 0, 0.5f, 0}), first(150));  // as the CPU sampler's test
  EXPECT_EQ(kept_ids({1.0f, 0, 0.501f, 0}), first(151));
  EXPECT_EQ(kept_ids({1.0f, 200, 0.5f, 0}), first(100));
  EXPECT_EQ(kept_ids({1.0f, 200, 1.0f, 0}), first(200));
  // Four equal maxima in four CTA slices, then ~50000 zeros (-0 is +0) to split.
  std::vector<float> l = random_logits(100003, 7, 1.0f, false);
  for (float& x : l) x = std::min(x, 0.0f);
  for (int i : {40000, 3, 99999, 60000}) l[i] = 5.0f;
  l[0] = -0.0f, l[1] = 0.0f, l[2] = -0.0f;
  DeviceRow row(l);
  for (const SamplingParams& c : {SamplingParams{1.0f, 3, 1.0f, 0}, SamplingParams{1.0f, 6, 1.0f, 0},
                                  SamplingParams{0.5f, 500, 0.9999f, 0}})
    expect_cpu_kept_set(row, l, c, "ties");
  const std::vector<uint8_t> kept = row.kept_set({1.0f, 6, 1.0f, 0});
  for (int i : {0, 1, 3, 40000, 60000, 99999}) EXPECT_EQ(kept[i], 1) << i;
  EXPECT_EQ(kept[2], 0);
}

TEST_F(CudaSampling, DrawsFollowTheKeptProbabilities) {
  // Five tokens of probabilities 0.15, 0.05, 0.5, 0.1, 0.2 (the CPU sampler test's).
  std::vector<float> l;
  for (double p : {0.15, 0.05, 0.5, 0.1, 0.2}) l.push_back(static_cast<float>(std::log(p)) + 3.0f);
  DeviceRow row(l);
  const SamplingParams configs[] = {
      {1.0f, 0, 1.0f, 11}, {0.5f, 0, 1.0f, 12}, {2.0f, 0, 1.0f, 13}, {1.0f, 2, 1.0f, 14},
      {1.0f, 0, 0.75f, 15}, {1.0f, 3, 0.6f, 16}};
  constexpr int kDraws = 20000;
  for (const SamplingParams& c : configs) {
    const optable::KeptSet ref = optable::cpu_kept_set(l, c);
    std::vector<double> freq(l.size(), 0.0);
    for (int32_t t : row.draws(c, 1000, kDraws)) freq.at(t) += 1.0 / kDraws;
    double chi2 = 0, worst = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      worst = std::max(worst, std::abs(freq[i] - ref.prob[i]));
      if (ref.prob[i] > 0) chi2 += kDraws * (freq[i] - ref.prob[i]) * (freq[i] - ref.prob[i]) / ref.prob[i];
      else EXPECT_EQ(freq[i], 0.0) << "token " << i << " is outside the kept set";
    }
    // 4 degrees of freedom at most: chi2 > 20 has odds below 1e-3 (fixed seeds: no flakes).
    EXPECT_LT(chi2, 20.0) << "T " << c.temperature << " k " << c.top_k << " p " << c.top_p;
    EXPECT_LT(worst, 0.012) << "T " << c.temperature << " k " << c.top_k << " p " << c.top_p;
  }
}

TEST_F(CudaSampling, SeedAndStepKeyTheDraw) {
  DeviceRow row(random_logits(1001, 300, 0.3f, false));  // flat: draws spread widely
  const SamplingParams c{1.0f, 0, 1.0f, 42};
  const std::vector<int32_t> a = row.draws(c, 0, 200), b = row.draws(c, 0, 200);
  EXPECT_EQ(a, b);
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 150u) << "steps should draw afresh";
  SamplingParams other = c;
  other.seed = 43;
  const std::vector<int32_t> d = row.draws(other, 0, 200);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == d[i];
  EXPECT_LT(same, 10) << "another seed should draw other tokens";
}

// Rows of every kind in one launch, each starting at its own alignment
// (stride n + 2): every row's token and kept set equal those of the row
// sampled alone, step after step; padding rows (step -1) write nothing.
TEST_F(CudaSampling, RowsOfABatchPickWhatTheyPickAlone) {
  constexpr int64_t n = 5003, ld = n + 2;
  const SamplingParams rows[] = {{},
                                 {1.0f, 0, 1.0f, 1},
                                 {0.8f, 40, 0.95f, 2},
                                 {0.0f, 40, 0.5f, 3},  // greedy whatever else it says
                                 {1.0f, 0, 0.9f, 4},
                                 {1.3f, 1, 1.0f, 5},
                                 {0.7f, 50, 1.0f, 6},
                                 {2.0f, 700, 0.99f, 7},
                                 {0.3f, 0, 0.2f, 8}};
  constexpr int b = sizeof rows / sizeof rows[0];
  std::vector<float> all(b * ld, 100.0f);  // between rows: a read past n would win
  for (int r = 0; r < b; ++r) {
    const std::vector<float> l = random_logits(n, 400 + r, r % 2 ? 2.0f : 0.5f, r % 3 == 0);
    std::copy(l.begin(), l.end(), all.begin() + r * ld);
  }
  DeviceBuffer<float> logits(all.size());
  logits.upload(all);
  DeviceBuffer<SamplingParams> params(b);
  params.upload(std::vector<SamplingParams>(rows, rows + b));
  DeviceBuffer<int32_t> steps(b), tokens(b), alone(b);
  DeviceBuffer<uint8_t> kept(b * n), kept_alone(b * n);
  for (int32_t step = 0; step < 8; ++step) {
    std::vector<int32_t> s(b);
    for (int r = 0; r < b; ++r) s[r] = r == 4 || r == 7 ? -1 : 1000 * r + step;
    steps.upload(s);
    for (auto* buf : {&tokens, &alone}) FSVD_CUDA_CHECK(cudaMemset(buf->data(), 0xff, buf->bytes()));
    for (auto* buf : {&kept, &kept_alone}) FSVD_CUDA_CHECK(cudaMemset(buf->data(), 0xff, buf->bytes()));
    sample_tokens(logits.data(), b, n, ld, params.data(), steps.data(), tokens.data(), nullptr, kept.data());
    for (int r = 0; r < b; ++r)
      sample_tokens(logits.data() + r * ld, 1, n, n, params.data() + r, steps.data() + r, alone.data() + r, nullptr,
                    kept_alone.data() + r * n);
    const std::vector<int32_t> got = tokens.download();
    EXPECT_EQ(got, alone.download()) << "step " << step;
    EXPECT_EQ(kept.download(), kept_alone.download()) << "step " << step;
    for (int r = 0; r < b; ++r) {
      if (s[r] < 0) EXPECT_EQ(got[r], -1) << "padding row " << r << " wrote a token";
      else EXPECT_TRUE(got[r] >= 0 && got[r] < n) << "row " << r << " drew " << got[r];
    }
  }
}

// One capture serves any parameters: the graph reads them, and the steps,
// from device memory at each replay, and draws what direct launches draw.
TEST_F(CudaSampling, CapturedGraphFollowsParamsAndStepsInDeviceMemory) {
  constexpr int b = 3;
  constexpr int64_t n = 32000;
  std::vector<float> all;
  for (int r = 0; r < b; ++r) {
    const std::vector<float> l = random_logits(n, 301 + r, 1.0f, false);
    all.insert(all.end(), l.begin(), l.end());
  }
  DeviceBuffer<float> logits(all.size());
  logits.upload(all);
  DeviceBuffer<SamplingParams> params(b);
  DeviceBuffer<int32_t> steps(b), tokens(b);
  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  // Each replay's parameters and steps, then the same through direct launches.
  auto settings = [](int i) {
    const SamplingParams menu[] = {{}, {0.9f, 100, 0.95f, 7}, {1.0f, 0, 1.0f, 8}, {0.5f, 0, 0.9f, 9}};
    std::vector<SamplingParams> p(b);
    std::vector<int32_t> s(b);
    for (int r = 0; r < b; ++r) {
      p[r] = menu[(i / 4 + r) % 4];
      s[r] = (i + r) % 5 == 4 ? -1 : 50 + i;
    }
    return std::pair(p, s);
  };
  auto run = [&](int i, const std::function<void()>& launch) {
    const auto [p, s] = settings(i);
    FSVD_CUDA_CHECK(cudaMemcpyAsync(params.data(), p.data(), params.bytes(), cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaMemcpyAsync(steps.data(), s.data(), steps.bytes(), cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaMemsetAsync(tokens.data(), 0xff, tokens.bytes(), stream));
    launch();
    std::vector<int32_t> t(b);
    FSVD_CUDA_CHECK(cudaMemcpyAsync(t.data(), tokens.data(), tokens.bytes(), cudaMemcpyDeviceToHost, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    return t;
  };
  auto launch = [&] { sample_tokens(logits.data(), b, n, n, params.data(), steps.data(), tokens.data(), stream); };
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  launch();
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::set<int32_t> seen;
  for (int i = 0; i < 40; ++i) {
    const std::vector<int32_t> replayed = run(i, [&] { FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
    EXPECT_EQ(replayed, run(i, launch)) << "replay " << i;
    seen.insert(replayed.begin(), replayed.end());
  }
  EXPECT_GT(seen.size(), 20u) << "steps should draw afresh";
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_F(CudaSampling, NonFiniteLogitsNeverWinUnlessNothingIsFinite) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  DeviceRow mixed(std::vector<float>{nan, 1.0f, -inf, 1.0f, nan});
  for (int32_t t : mixed.draws({1.0f, 0, 1.0f, 3}, 0, 200)) EXPECT_TRUE(t == 1 || t == 3) << t;
  // The CPU sampler throws on these; the kernel falls back to the argmax.
  EXPECT_EQ(DeviceRow(std::vector<float>{1.0f, inf, 3.0f, inf}).sample({1.0f, 0, 0.9f, 0}), 1);
  EXPECT_EQ(DeviceRow(std::vector<float>{nan, -inf, nan}).sample({1.0f, 5, 1.0f, 0}), 0);
}

// Parameters are checked where they are written (check_sampling_params, as
// the CPU sampler does); the launch checks its shapes and pointers.
TEST(CudaSamplingArgs, RejectsBadParamsAndShapes) {
  const SamplingParams bad[] = {
      {-0.1f, 0, 1.0f, 0}, {std::nanf(""), 0, 1.0f, 0}, {1.0f, -1, 1.0f, 0}, {1.0f, 0, 0.0f, 0},
      {1.0f, 0, 1.5f, 0}};
  for (const SamplingParams& c : bad) {
    EXPECT_THROW(Sampler({c.temperature, c.top_k, c.top_p, c.seed}), Error);
    EXPECT_THROW(check_sampling_params(c), Error);
  }
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  SamplingParams* p = reinterpret_cast<SamplingParams*>(uintptr_t{256});
  EXPECT_THROW(sample_tokens(f, 1, 0, 10, p, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, 1, kMaxSamplingVocab + 1, kMaxSamplingVocab + 1, p, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, 0, 10, 10, p, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, kMaxSamplingRows + 1, 10, 10, p, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, 2, 10, 9, p, i, i, nullptr), Error);  // rows overlap
  EXPECT_THROW(sample_tokens(reinterpret_cast<float*>(uintptr_t{258}), 1, 10, 10, p, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(nullptr, 1, 10, 10, p, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, 1, 10, 10, nullptr, i, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, 1, 10, 10, p, nullptr, i, nullptr), Error);
  EXPECT_THROW(sample_tokens(f, 1, 10, 10, p, i, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
