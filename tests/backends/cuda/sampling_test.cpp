// What the op table (backends/op_table) does not check of cuda::sample_token:
// ties at the cut keep the lowest ids, draws follow the kept probabilities, a
// step and the seed key the draw (also in a captured graph), non-finite
// logits, and the parameters it refuses.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

struct DeviceRow {
  explicit DeviceRow(const std::vector<float>& logits) : n(logits.size()), logits(n), kept(n) {
    this->logits.upload(logits);
  }
  int64_t n;
  DeviceBuffer<float> logits;
  DeviceBuffer<uint8_t> kept;
  DeviceBuffer<int32_t> step{1}, token{1};

  int32_t sample(const SamplingParams& c, int32_t at_step = 0) {
    step.upload(std::vector<int32_t>{at_step});
    FSVD_CUDA_CHECK(cudaMemset(token.data(), 0xff, sizeof(int32_t)));
    sample_token(logits.data(), n, c, step.data(), token.data(), nullptr);
    return token.download()[0];
  }
  std::vector<uint8_t> kept_set(const SamplingParams& c) {
    FSVD_CUDA_CHECK(cudaMemset(kept.data(), 0xff, kept.bytes()));
    sample_token(logits.data(), n, c, step.data(), token.data(), nullptr, kept.data());
    return kept.download();
  }
  // One draw for each step in [first, first + count), launched back to back.
  std::vector<int32_t> draws(const SamplingParams& c, int first, int count) {
    std::vector<int32_t> steps(count);
    std::iota(steps.begin(), steps.end(), first);
    DeviceBuffer<int32_t> dsteps(count), tokens(count);
    dsteps.upload(steps);
    FSVD_CUDA_CHECK(cudaMemset(tokens.data(), 0xff, tokens.bytes()));
    for (int i = 0; i < count; ++i)
      sample_token(logits.data(), n, c, dsteps.data() + i, tokens.data() + i, nullptr);
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

TEST_F(CudaSampling, CapturedGraphDrawsAfreshAtEachReplay) {
  DeviceRow row(random_logits(32000, 301, 1.0f, false));
  const SamplingParams c{0.9f, 100, 0.95f, 7};
  const std::vector<int32_t> direct = row.draws(c, 50, 40);
  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  sample_token(row.logits.data(), row.n, c, row.step.data(), row.token.data(), stream);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int32_t> replayed;
  for (int32_t step = 50; step < 90; ++step) {
    FSVD_CUDA_CHECK(cudaMemcpyAsync(row.step.data(), &step, sizeof step, cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    int32_t token = -1;
    FSVD_CUDA_CHECK(cudaMemcpyAsync(&token, row.token.data(), sizeof token, cudaMemcpyDeviceToHost, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    replayed.push_back(token);
  }
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
  EXPECT_EQ(replayed, direct);
}

TEST_F(CudaSampling, NonFiniteLogitsNeverWinUnlessNothingIsFinite) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  DeviceRow mixed(std::vector<float>{nan, 1.0f, -inf, 1.0f, nan});
  for (int32_t t : mixed.draws({1.0f, 0, 1.0f, 3}, 0, 200)) EXPECT_TRUE(t == 1 || t == 3) << t;
  // The CPU sampler throws on these; the kernel falls back to the argmax.
  EXPECT_EQ(DeviceRow(std::vector<float>{1.0f, inf, 3.0f, inf}).sample({1.0f, 0, 0.9f, 0}), 1);
  EXPECT_EQ(DeviceRow(std::vector<float>{nan, -inf, nan}).sample({1.0f, 5, 1.0f, 0}), 0);
}

TEST(CudaSamplingArgs, RejectsWhatTheCpuSamplerRejects) {
  const SamplingParams bad[] = {
      {-0.1f, 0, 1.0f, 0}, {std::nanf(""), 0, 1.0f, 0}, {1.0f, -1, 1.0f, 0}, {1.0f, 0, 0.0f, 0},
      {1.0f, 0, 1.5f, 0}};
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  uint8_t* kept = reinterpret_cast<uint8_t*>(uintptr_t{256});
  for (const SamplingParams& c : bad) {
    EXPECT_THROW(Sampler({c.temperature, c.top_k, c.top_p, c.seed}), Error);
    EXPECT_THROW(check_sampling_params(c), Error);
    EXPECT_THROW(sample_token(f, 10, c, i, i, nullptr), Error);
  }
  const SamplingParams ok{1.0f, 0, 1.0f, 0};
  EXPECT_THROW(sample_token(f, 0, ok, i, i, nullptr), Error);
  EXPECT_THROW(sample_token(f, kMaxSamplingVocab + 1, ok, i, i, nullptr), Error);
  EXPECT_THROW(sample_token(nullptr, 10, ok, i, i, nullptr), Error);
  EXPECT_THROW(sample_token(f, 10, ok, i, nullptr, nullptr), Error);
  EXPECT_THROW(sample_token(f, 10, ok, nullptr, i, nullptr), Error);
  EXPECT_THROW(sample_token(f, 10, SamplingParams{}, i, i, nullptr, kept), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
