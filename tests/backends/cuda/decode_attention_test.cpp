// decode_attention against cpu::attention on the values the cache holds (bf16-
// rounded, or exact fp32), for GQA ratios 1..16, head_dim 64 and 128 and
// lengths spanning one to many KV slices; rows past the valid length are
// poisoned and must be ignored. Also rope_store_kv + decode_attention captured
// once in a CUDA graph and replayed while the cache grows.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "backends/cuda/rope_kv.h"
#include "core/error.h"
#include "model/config.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::relative_error;

// fp32 math against the fp32 CPU reference on the same cache values: only
// rounding differs (exp2 of log2-scaled scores against exp, the order of the
// sums); the CPU's serial fp32 sums alone are up to 3e-6 from a double
// reference at 4097 positions. Outputs average many value rows, so they are
// ~sqrt(len) smaller than the rows and a lost or doubled position shows far
// above either bound. The bf16 bound is the brief's for the serving path.
double tolerance(ElementType t) { return t == ElementType::F32 ? 1e-5 : 1e-3; }

std::string type_name(ElementType t) { return t == ElementType::F32 ? "fp32" : "bf16"; }

class CudaDecodeAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// The tests that read a cache, for each element type.
class CudaDecodeAttentionTyped : public CudaDecodeAttention,
                                 public ::testing::WithParamInterface<ElementType> {};

std::string describe(const HeadShape& s) {
  return "heads " + std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) + " hd " +
         std::to_string(s.head_dim);
}

// A layer's cache of random rows of `type`, on the host as the fp32 values
// the device holds (rounded for bf16).
struct TestCache {
  HeadShape shape;
  int max_ctx;
  size_t kv_dim;
  ElementType type;
  std::vector<float> k, v;
  DeviceBuffer<char> dk, dv;

  TestCache(const HeadShape& s, int ctx, uint64_t seed, ElementType t)
      : shape(s), max_ctx(ctx), kv_dim(size_t(s.n_kv_heads) * s.head_dim), type(t),
        k(fsvd::testing::random_normal(ctx * kv_dim, seed)),
        v(fsvd::testing::random_normal(ctx * kv_dim, seed + 1)),
        dk(ctx * kv_dim * element_bytes(t)), dv(dk.size()) {
    store(k, dk);
    store(v, dv);
  }
  KvCacheLayer layer() { return {dk.data(), dv.data(), max_ctx, type}; }
  // Rows [from, max_ctx) become NaN: the kernel must never read them.
  void poison_from(int from) {
    const size_t row = kv_dim * element_bytes(type);
    FSVD_CUDA_CHECK(cudaMemset(dk.data() + from * row, 0xff, (max_ctx - from) * row));
    FSVD_CUDA_CHECK(cudaMemset(dv.data() + from * row, 0xff, (max_ctx - from) * row));
  }

 private:
  // Copies values to the device as `type`, rounding them in place for bf16.
  void store(std::vector<float>& values, DeviceBuffer<char>& device) {
    if (type == ElementType::F32) {
      FSVD_CUDA_CHECK(cudaMemcpy(device.data(), values.data(), values.size() * 4, cudaMemcpyHostToDevice));
    } else {
      const std::vector<uint16_t> bits = testutil::round_to_bf16(values);
      FSVD_CUDA_CHECK(cudaMemcpy(device.data(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    }
  }
};

// Runs the op for length len and returns its output (poisoned beforehand).
struct AttentionRunner {
  HeadShape shape;
  DeviceBuffer<float> q, out, workspace;
  DeviceBuffer<int> pos{1};

  AttentionRunner(const HeadShape& s, int max_ctx, ElementType type)
      : shape(s), q(size_t(s.n_heads) * s.head_dim), out(q.size()),
        workspace(plan_decode_attention(s, max_ctx, type).workspace_floats) {}
  std::vector<float> run(TestCache& cache, int p) {
    pos.upload(std::vector<int>{p});
    testutil::poison(out);
    decode_attention(q.data(), cache.layer(), pos.data(), shape, workspace.data(), workspace.size(),
                     out.data(), nullptr);
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    return out.download();
  }
};

std::vector<float> cpu_reference(const std::vector<float>& q, const TestCache& c, int len) {
  std::vector<float> ref(q.size());
  cpu::attention(q.data(), q.size(), c.k.data(), c.v.data(), 1, len - 1,
                 {c.shape.n_heads, c.shape.n_kv_heads, c.shape.head_dim}, ref.data());
  return ref;
}

TEST_P(CudaDecodeAttentionTyped, MatchesCpuOnTheCachedValuesAndIgnoresRowsPastLength) {
  const ElementType type = GetParam();
  double worst = 0;  // reported in the test's properties
  // GQA ratios 1, 3, 4, 8 and 16 (two CTAs per kv head), both head sizes.
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}, {16, 1, 128}};
  const int max_ctx = 4097;
  uint64_t seed = 500;
  for (const HeadShape& s : shapes) {
    TestCache cache(s, max_ctx, seed += 2, type);
    AttentionRunner runner(s, max_ctx, type);
    const std::vector<float> q = fsvd::testing::random_normal(runner.q.size(), ++seed, 2.0f);
    runner.q.upload(q);
    // Longest first, so each step only has to poison more rows.
    for (int len : {4097, 1000, 257, 256, 255, 37, 2, 1}) {
      cache.poison_from(len);
      const std::vector<float> got = runner.run(cache, len - 1);
      const double err = relative_error(got, cpu_reference(q, cache, len));
      EXPECT_LT(err, tolerance(type)) << describe(s) << " len " << len;
      worst = std::max(worst, err);
    }
  }
  RecordProperty("worst_rel_error", ::testing::PrintToString(worst));
}

TEST_P(CudaDecodeAttentionTyped, EveryLengthUpToMaxContext) {
  const ElementType type = GetParam();
  const HeadShape s{12, 4, 64};
  const int max_ctx = 300;
  TestCache cache(s, max_ctx, 900, type);
  AttentionRunner runner(s, max_ctx, type);
  const std::vector<float> q = fsvd::testing::random_normal(runner.q.size(), 901, 2.0f);
  runner.q.upload(q);
  for (int len = max_ctx; len >= 1; --len) {
    cache.poison_from(len);
    const std::vector<float> got = runner.run(cache, len - 1);
    ASSERT_LT(relative_error(got, cpu_reference(q, cache, len)), tolerance(type)) << "len " << len;
  }
}

TEST_P(CudaDecodeAttentionTyped, PositionOutsideCacheGivesNaN) {
  const ElementType type = GetParam();
  const HeadShape s{8, 2, 128};
  const int max_ctx = 100;
  TestCache cache(s, max_ctx, 77, type);
  AttentionRunner runner(s, max_ctx, type);
  runner.q.upload(fsvd::testing::random_normal(runner.q.size(), 78));
  for (int pos : {-1, max_ctx, 1 << 30})
    for (float x : runner.run(cache, pos)) ASSERT_TRUE(std::isnan(x)) << "pos " << pos;
}

TEST_F(CudaDecodeAttention, RejectsSmallWorkspaceAndBadShapes) {
  const HeadShape s{8, 2, 128};
  TestCache cache(s, 1000, 5, ElementType::BF16);
  AttentionRunner runner(s, 1000, ElementType::BF16);
  EXPECT_THROW(decode_attention(runner.q.data(), cache.layer(), runner.pos.data(), s,
                                runner.workspace.data(), runner.workspace.size() - 1,
                                runner.out.data(), nullptr),
               Error);
  EXPECT_THROW(decode_attention(runner.q.data(), cache.layer(), runner.pos.data(), {8, 3, 128},
                                runner.workspace.data(), runner.workspace.size(),
                                runner.out.data(), nullptr),
               Error);
  EXPECT_THROW(decode_attention(runner.q.data(), cache.layer(), runner.pos.data(), {8, 2, 80},
                                runner.workspace.data(), runner.workspace.size(),
                                runner.out.data(), nullptr),
               Error);
}

TEST_F(CudaDecodeAttention, PlanFillsOneWaveAndSizesTheWorkspace) {
  int device = 0, sms = 0;
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (const HeadShape& s : {HeadShape{32, 32, 128}, HeadShape{32, 8, 128}, HeadShape{9, 3, 64},
                             HeadShape{64, 1, 64}}) {
    for (int max_ctx : {1, 31, 33, 4097, 131072}) {
      // fp32 caches run kernels of the same register budget, hence the same plan.
      const DecodeAttentionPlan plan = plan_decode_attention(s, max_ctx);
      const DecodeAttentionPlan f32 = plan_decode_attention(s, max_ctx, ElementType::F32);
      EXPECT_EQ(f32.splits, plan.splits) << describe(s) << " max_ctx " << max_ctx;
      EXPECT_EQ(f32.workspace_floats, plan.workspace_floats) << describe(s) << " max_ctx " << max_ctx;
      const int chunks = (s.n_heads / s.n_kv_heads + 7) / 8;
      EXPECT_EQ(plan.head_chunks, chunks) << describe(s);
      EXPECT_GE(plan.splits, 1) << describe(s) << " max_ctx " << max_ctx;
      EXPECT_LE(plan.splits, std::max(1, (max_ctx + 31) / 32)) << describe(s) << " max_ctx " << max_ctx;
      if (plan.splits > 1) {  // several slices only while they fit one wave of CTAs
        EXPECT_LE(plan.splits * s.n_kv_heads * chunks, 4 * sms) << describe(s) << " max_ctx " << max_ctx;
      }
      EXPECT_EQ(plan.workspace_floats, size_t(s.n_heads) * plan.splits * (s.head_dim + 2));
    }
  }
}

// One decode step's attention part captured once, replayed for successive
// positions across slice boundaries, each compared with the CPU executor's
// sequence of ops (rope on q and k, cache store, attention).
TEST_P(CudaDecodeAttentionTyped, GraphReplayFollowsTheGrowingCache) {
  const ElementType type = GetParam();
  const HeadShape s{32, 4, 64};
  const int max_ctx = 512, prefill = 250, steps = 14;
  ModelConfig config;
  config.head_dim = s.head_dim;
  std::vector<float> inv(s.head_dim / 2);
  rope_inv_freq(config, inv.data());
  DeviceBuffer<float> dinv(inv.size()), dk(size_t(s.n_kv_heads) * s.head_dim), dv(dk.size());
  dinv.upload(inv);

  TestCache cache(s, max_ctx, 1234, type);  // rows < prefill stand for the prompt
  cache.poison_from(prefill);
  AttentionRunner runner(s, max_ctx, type);
  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  rope_store_kv(runner.q.data(), dk.data(), dv.data(), dinv.data(), runner.pos.data(), s,
                cache.layer(), stream);
  decode_attention(runner.q.data(), cache.layer(), runner.pos.data(), s, runner.workspace.data(),
                   runner.workspace.size(), runner.out.data(), stream);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  const size_t q_dim = runner.q.size(), kv_dim = cache.kv_dim;
  for (int step = 0; step < steps; ++step) {
    const int pos = prefill + step;
    std::vector<float> q = fsvd::testing::random_normal(q_dim, 2000 + 3 * step, 2.0f);
    std::vector<float> k = fsvd::testing::random_normal(kv_dim, 2001 + 3 * step);
    const std::vector<float> v = fsvd::testing::random_normal(kv_dim, 2002 + 3 * step);
    FSVD_CUDA_CHECK(cudaMemcpyAsync(runner.q.data(), q.data(), q_dim * 4, cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaMemcpyAsync(dk.data(), k.data(), kv_dim * 4, cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaMemcpyAsync(dv.data(), v.data(), kv_dim * 4, cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaMemcpyAsync(runner.pos.data(), &pos, sizeof(int), cudaMemcpyHostToDevice, stream));
    FSVD_CUDA_CHECK(cudaMemsetAsync(runner.out.data(), 0xff, runner.out.bytes(), stream));
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));

    // The CPU twin: rotate q and k, append the k and v rows as the cache
    // stores them, attend.
    cpu::rope(q.data(), 1, q_dim, s.n_heads, s.head_dim, pos, inv.data());
    cpu::rope(k.data(), 1, kv_dim, s.n_kv_heads, s.head_dim, pos, inv.data());
    std::vector<float> v_row = v;
    if (type == ElementType::BF16) {
      testutil::round_to_bf16(k);
      testutil::round_to_bf16(v_row);
    }
    std::copy(k.begin(), k.end(), cache.k.begin() + pos * kv_dim);
    std::copy(v_row.begin(), v_row.end(), cache.v.begin() + pos * kv_dim);
    EXPECT_LT(relative_error(runner.q.download(), q), 1e-5) << "step " << step;
    EXPECT_LT(relative_error(runner.out.download(), cpu_reference(q, cache, pos + 1)), tolerance(type))
        << "step " << step;
  }
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
}

INSTANTIATE_TEST_SUITE_P(Caches, CudaDecodeAttentionTyped,
                         ::testing::Values(ElementType::BF16, ElementType::F32),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
