// decode_attention against cpu::attention on the bf16-rounded cache, for GQA
// ratios 1..16, head_dim 64 and 128 and lengths spanning one to many KV
// slices; rows past the valid length are poisoned and must be ignored. Also
// rope_store_kv + decode_attention captured once in a CUDA graph and replayed
// while the cache grows.
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

// The brief's bound for fp32 math over a bf16 cache against the fp32 CPU
// reference on the same rounded values. Outputs average many value rows, so
// they are ~sqrt(len) smaller than the rows and a lost or doubled position
// shows far above it.
constexpr double kTolerance = 1e-3;

class CudaDecodeAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

std::string describe(const HeadShape& s) {
  return "heads " + std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) + " hd " +
         std::to_string(s.head_dim);
}

// A layer's cache of random bf16 rows on host (rounded fp32) and device.
struct TestCache {
  HeadShape shape;
  int max_ctx;
  size_t kv_dim;
  std::vector<float> k, v;
  DeviceBuffer<uint16_t> dk, dv;

  TestCache(const HeadShape& s, int ctx, uint64_t seed)
      : shape(s), max_ctx(ctx), kv_dim(size_t(s.n_kv_heads) * s.head_dim),
        k(fsvd::testing::random_normal(ctx * kv_dim, seed)),
        v(fsvd::testing::random_normal(ctx * kv_dim, seed + 1)),
        dk(ctx * kv_dim), dv(ctx * kv_dim) {
    dk.upload(testutil::round_to_bf16(k));
    dv.upload(testutil::round_to_bf16(v));
  }
  KvCacheLayer layer() { return {testutil::as_bf16(dk), testutil::as_bf16(dv), max_ctx}; }
  // Rows [from, max_ctx) become NaN: the kernel must never read them.
  void poison_from(int from) {
    const size_t off = from * kv_dim * 2, bytes = (max_ctx - from) * kv_dim * 2;
    FSVD_CUDA_CHECK(cudaMemset(reinterpret_cast<char*>(dk.data()) + off, 0xff, bytes));
    FSVD_CUDA_CHECK(cudaMemset(reinterpret_cast<char*>(dv.data()) + off, 0xff, bytes));
  }
};

// Runs the op for length len and returns its output (poisoned beforehand).
struct AttentionRunner {
  HeadShape shape;
  DeviceBuffer<float> q, out, workspace;
  DeviceBuffer<int> pos{1};

  AttentionRunner(const HeadShape& s, int max_ctx)
      : shape(s), q(size_t(s.n_heads) * s.head_dim), out(q.size()),
        workspace(plan_decode_attention(s, max_ctx).workspace_floats) {}
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

TEST_F(CudaDecodeAttention, MatchesCpuOnBf16CacheAndIgnoresRowsPastLength) {
  // GQA ratios 1, 3, 4, 8 and 16 (two CTAs per kv head), both head sizes.
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}, {16, 1, 128}};
  const int max_ctx = 4097;
  uint64_t seed = 500;
  for (const HeadShape& s : shapes) {
    TestCache cache(s, max_ctx, seed += 2);
    AttentionRunner runner(s, max_ctx);
    const std::vector<float> q = fsvd::testing::random_normal(runner.q.size(), ++seed, 2.0f);
    runner.q.upload(q);
    // Longest first, so each step only has to poison more rows.
    for (int len : {4097, 1000, 257, 256, 255, 37, 2, 1}) {
      cache.poison_from(len);
      const std::vector<float> got = runner.run(cache, len - 1);
      EXPECT_LT(relative_error(got, cpu_reference(q, cache, len)), kTolerance)
          << describe(s) << " len " << len;
    }
  }
}

TEST_F(CudaDecodeAttention, EveryLengthUpToMaxContext) {
  const HeadShape s{12, 4, 64};
  const int max_ctx = 300;
  TestCache cache(s, max_ctx, 900);
  AttentionRunner runner(s, max_ctx);
  const std::vector<float> q = fsvd::testing::random_normal(runner.q.size(), 901, 2.0f);
  runner.q.upload(q);
  for (int len = max_ctx; len >= 1; --len) {
    cache.poison_from(len);
    const std::vector<float> got = runner.run(cache, len - 1);
    ASSERT_LT(relative_error(got, cpu_reference(q, cache, len)), kTolerance) << "len " << len;
  }
}

TEST_F(CudaDecodeAttention, PositionOutsideCacheGivesNaN) {
  const HeadShape s{8, 2, 128};
  const int max_ctx = 100;
  TestCache cache(s, max_ctx, 77);
  AttentionRunner runner(s, max_ctx);
  runner.q.upload(fsvd::testing::random_normal(runner.q.size(), 78));
  for (int pos : {-1, max_ctx, 1 << 30})
    for (float x : runner.run(cache, pos)) ASSERT_TRUE(std::isnan(x)) << "pos " << pos;
}

TEST_F(CudaDecodeAttention, RejectsSmallWorkspaceAndBadShapes) {
  const HeadShape s{8, 2, 128};
  TestCache cache(s, 1000, 5);
  AttentionRunner runner(s, 1000);
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
      const DecodeAttentionPlan plan = plan_decode_attention(s, max_ctx);
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
TEST_F(CudaDecodeAttention, GraphReplayFollowsTheGrowingCache) {
  const HeadShape s{32, 4, 64};
  const int max_ctx = 512, prefill = 250, steps = 14;
  ModelConfig config;
  config.head_dim = s.head_dim;
  std::vector<float> inv(s.head_dim / 2);
  rope_inv_freq(config, inv.data());
  DeviceBuffer<float> dinv(inv.size()), dk(size_t(s.n_kv_heads) * s.head_dim), dv(dk.size());
  dinv.upload(inv);

  TestCache cache(s, max_ctx, 1234);  // rows < prefill stand for the prompt
  cache.poison_from(prefill);
  AttentionRunner runner(s, max_ctx);
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

    // The CPU twin: rotate q and k, append bf16 k and v rows, attend.
    cpu::rope(q.data(), 1, q_dim, s.n_heads, s.head_dim, pos, inv.data());
    cpu::rope(k.data(), 1, kv_dim, s.n_kv_heads, s.head_dim, pos, inv.data());
    std::vector<float> v_row = v;
    testutil::round_to_bf16(k);
    testutil::round_to_bf16(v_row);
    std::copy(k.begin(), k.end(), cache.k.begin() + pos * kv_dim);
    std::copy(v_row.begin(), v_row.end(), cache.v.begin() + pos * kv_dim);
    EXPECT_LT(relative_error(runner.q.download(), q), 1e-5) << "step " << step;
    EXPECT_LT(relative_error(runner.out.download(), cpu_reference(q, cache, pos + 1)), kTolerance)
        << "step " << step;
  }
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
