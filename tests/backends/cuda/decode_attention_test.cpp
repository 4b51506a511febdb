// What the op table (backends/op_table) does not check of decode_attention:
// the op captured once in a CUDA graph and replayed while the cache grows
// (the slice-arrival counters must reset each launch: every replay gives the
// bits of a fresh launch), a position outside the cache, the arguments it
// refuses and the KV-slice plan.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "backends/cuda/handles.h"
#include "backends/op_table/inputs.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

using optable::DeviceArray;
using optable::random_values;

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

// A layer's cache of random rows of `type`.
struct TestCache {
  size_t kv_dim;
  DeviceArray k, v;
  int max_ctx;
  TestCache(const HeadShape& s, int ctx, uint64_t seed, ElementType type)
      : kv_dim(size_t(s.n_kv_heads) * s.head_dim), k(random_values(ctx * kv_dim, seed), type),
        v(random_values(ctx * kv_dim, seed + 1), type), max_ctx(ctx) {}
  KvCacheLayer layer() const { return {k.data(), v.data(), max_ctx, k.type()}; }
  // Rows [from, max_ctx) become NaN: the kernel must never read them.
  void poison_from(int from) {
    const size_t row = kv_dim * element_bytes(k.type());
    for (const DeviceArray* c : {&k, &v})
      FSVD_CUDA_CHECK(cudaMemset(static_cast<uint8_t*>(c->data()) + from * row, 0xff, (max_ctx - from) * row));
  }
};

// One token's q, k, v (before RoPE) and the op's buffers.
struct AttentionRunner {
  HeadShape shape;
  DeviceBuffer<float> q, k, v, inv, out, workspace;
  DeviceBuffer<int> pos{1};

  AttentionRunner(const HeadShape& s, int max_ctx, uint64_t seed)
      : shape(s), q(optable::to_device(random_values(size_t(s.n_heads) * s.head_dim, seed, 2.0f))),
        k(optable::to_device(random_values(size_t(s.n_kv_heads) * s.head_dim, seed + 1))),
        v(optable::to_device(random_values(k.size(), seed + 2))),
        inv(optable::to_device(optable::rope_frequencies(s.head_dim, false))), out(q.size()),
        workspace(plan_decode_attention(s, max_ctx).workspace_floats) {
    workspace.zero();
  }
  void launch(const TestCache& cache, cudaStream_t stream, bool pdl, float* workspace_floats, float* output) {
    decode_attention(q.data(), k.data(), v.data(), inv.data(), cache.layer(), pos.data(), shape, workspace_floats,
                     workspace.size(), output, stream, pdl);
  }
  // Runs the op at position p (the output poisoned beforehand).
  std::vector<float> run(const TestCache& cache, int p) {
    pos.upload(std::vector<int>{p});
    optable::poison(out);
    launch(cache, nullptr, false, workspace.data(), out.data());
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    return out.download();
  }
};

TEST_P(CudaDecodeAttentionTyped, PositionOutsideCacheGivesNaNAndWritesNoRow) {
  const HeadShape s{8, 2, 128};
  const int max_ctx = 100;
  const TestCache cache(s, max_ctx, 77, GetParam());
  AttentionRunner runner(s, max_ctx, 78);
  const std::vector<float> k_before = cache.k.download(), v_before = cache.v.download();
  for (int pos : {-1, max_ctx, 1 << 30})
    for (float x : runner.run(cache, pos)) ASSERT_TRUE(std::isnan(x)) << "pos " << pos;
  EXPECT_TRUE(testutil::same_written_values(cache.k.download(), k_before));
  EXPECT_TRUE(testutil::same_written_values(cache.v.download(), v_before));
}

TEST_F(CudaDecodeAttention, RejectsSmallWorkspaceBadShapesAndNullInputs) {
  const HeadShape s{8, 2, 128};
  const TestCache cache(s, 1000, 5, ElementType::BF16);
  AttentionRunner r(s, 1000, 6);
  auto call = [&](const HeadShape& shape, size_t workspace, const float* q) {
    decode_attention(q, r.k.data(), r.v.data(), r.inv.data(), cache.layer(), r.pos.data(), shape,
                     r.workspace.data(), workspace, r.out.data(), nullptr);
  };
  EXPECT_THROW(call(s, r.workspace.size() - 1, r.q.data()), Error);
  EXPECT_THROW(call({8, 3, 128}, r.workspace.size(), r.q.data()), Error);
  EXPECT_THROW(call({8, 2, 80}, r.workspace.size(), r.q.data()), Error);
  EXPECT_THROW(call(s, r.workspace.size(), nullptr), Error);
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
      // Per-slice results for every query head, then one counter per CTA column.
      EXPECT_EQ(plan.workspace_floats,
                size_t(s.n_heads) * plan.splits * (s.head_dim + 2) + size_t(s.n_kv_heads) * chunks);
    }
  }
}

// The op captured once (as a programmatic dependent launch), replayed for
// successive positions across slice boundaries with a new token each step:
// each replay writes the cache row and the output a fresh launch (zeroed
// workspace, a twin cache) writes, bit for bit (the merge adds the slices in
// a fixed order).
TEST_P(CudaDecodeAttentionTyped, GraphReplayGivesWhatFreshLaunchesGive) {
  const HeadShape s{32, 4, 64};
  const int max_ctx = 512, prefill = 250, steps = 14;
  TestCache graphed(s, max_ctx, 1234, GetParam()), fresh(s, max_ctx, 1234, GetParam());
  graphed.poison_from(prefill);  // rows < prefill stand for the prompt
  fresh.poison_from(prefill);
  AttentionRunner runner(s, max_ctx, 1235);
  DeviceBuffer<float> fresh_out(runner.out.size());
  Stream stream;
  FSVD_CUDA_CHECK(cudaStreamCreate(stream.put()));
  Graph graph;
  GraphExec exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  runner.launch(graphed, stream, true, runner.workspace.data(), runner.out.data());
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, graph.put()));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), graph, 0));

  for (int step = 0; step < steps; ++step) {
    const int pos = prefill + step;
    runner.q.upload(random_values(runner.q.size(), 2000 + 3 * step, 2.0f));
    runner.k.upload(random_values(runner.k.size(), 2001 + 3 * step));
    runner.v.upload(random_values(runner.v.size(), 2002 + 3 * step));
    runner.pos.upload(std::vector<int>{pos});
    optable::poison(runner.out);
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    DeviceBuffer<float> workspace(runner.workspace.size());
    workspace.zero();
    optable::poison(fresh_out);
    runner.launch(fresh, nullptr, false, workspace.data(), fresh_out.data());
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    const std::string what = "step " + std::to_string(step);
    EXPECT_TRUE(testutil::same_written_values(runner.out.download(), fresh_out.download())) << what;
    const size_t row = pos * graphed.kv_dim;
    EXPECT_TRUE(testutil::same_written_values(graphed.k.download(row, graphed.kv_dim),
                                              fresh.k.download(row, fresh.kv_dim))) << what;
    EXPECT_TRUE(testutil::same_written_values(graphed.v.download(row, graphed.kv_dim),
                                              fresh.v.download(row, fresh.kv_dim))) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Caches, CudaDecodeAttentionTyped,
                         ::testing::Values(ElementType::BF16, ElementType::F32),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
