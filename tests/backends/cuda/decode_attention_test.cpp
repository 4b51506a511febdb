// What the op table (backends/op_table) does not check of decode_attention:
// the op captured once in a CUDA graph and replayed while a batch's caches
// grow (the slice-arrival counters must reset each launch: every replay
// gives the bits of a fresh launch), a position outside the cache, the
// arguments it refuses and the KV-slice plan.
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
using optable::PagedLayout;
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

// Sequences over one pool of `type` (blocks of 16, shuffled), each holding
// max_ctx positions: rows before filled[s] random, the rest NaN (the kernel
// must never read them before it writes them).
struct TestPool {
  size_t kv_dim;
  int max_ctx;
  PagedLayout layout;
  DeviceArray k, v;
  DeviceBuffer<int32_t> tables;
  TestPool(const HeadShape& s, int ctx, const std::vector<int>& filled, uint64_t seed, ElementType type)
      : kv_dim(size_t(s.n_kv_heads) * s.head_dim), max_ctx(ctx),
        layout(std::vector<int>(filled.size(), ctx), kDefaultBlockSize, ctx, true),
        k(values(filled, seed, type), type), v(values(filled, seed + 1, type), type),
        tables(optable::to_device(layout.tables)) {}
  KvCacheLayer pool() const { return {k.data(), v.data(), layout.block_size, layout.num_blocks, k.type()}; }
  std::vector<float> values(const std::vector<int>& filled, uint64_t seed, ElementType type) const {
    return layout.keep_filled(optable::as_stored(random_values(layout.pool_rows() * kv_dim, seed), type),
                              int64_t(kv_dim), filled);
  }
};

// A batch's q, k, v (before RoPE), positions and the op's buffers.
struct AttentionRunner {
  HeadShape shape;
  int batch, max_ctx;
  size_t q_dim, kv_dim;
  DeviceBuffer<float> q, k, v, inv, out, workspace;
  DeviceBuffer<int> pos;

  AttentionRunner(const HeadShape& s, int batch_rows, int ctx, uint64_t seed)
      : shape(s), batch(batch_rows), max_ctx(ctx), q_dim(size_t(s.n_heads) * s.head_dim),
        kv_dim(size_t(s.n_kv_heads) * s.head_dim),
        q(optable::to_device(random_values(batch * q_dim, seed, 2.0f))),
        k(optable::to_device(random_values(batch * kv_dim, seed + 1))),
        v(optable::to_device(random_values(batch * kv_dim, seed + 2))),
        inv(optable::to_device(optable::rope_frequencies(s.head_dim, false))), out(q.size()),
        workspace(plan_decode_attention(s, ctx, batch_rows).workspace_floats), pos(batch_rows) {
    workspace.zero();
  }
  void launch(const TestPool& p, cudaStream_t stream, bool pdl, float* workspace_floats, float* output) {
    decode_attention({q.data(), k.data(), v.data(), int64_t(q_dim), int64_t(kv_dim), int64_t(kv_dim)}, inv.data(),
                     p.pool(), {pos.data(), nullptr, p.tables.data(), p.layout.max_blocks}, batch, max_ctx, shape,
                     workspace_floats, workspace.size(), output, stream, pdl);
  }
  // Runs the op at positions `at` (the output poisoned beforehand).
  std::vector<float> run(const TestPool& p, const std::vector<int>& at) {
    pos.upload(at);
    optable::poison(out);
    launch(p, nullptr, false, workspace.data(), out.data());
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    return out.download();
  }
};

// A padding row gives zeros, a position past the cache NaN; neither writes a
// slot, nor disturbs the valid row beside it.
TEST_P(CudaDecodeAttentionTyped, PaddingGivesZerosAndPositionsPastTheCacheNaN) {
  const HeadShape s{8, 2, 128};
  const int max_ctx = 100;
  const TestPool pool(s, max_ctx, {0, 50, 0, 0}, 77, GetParam());
  AttentionRunner runner(s, 4, max_ctx, 78);
  const std::vector<float> k_before = pool.k.download(), v_before = pool.v.download();
  const std::vector<float> out = runner.run(pool, {-1, 50, max_ctx, 1 << 30});
  const size_t q_dim = runner.q_dim;
  for (size_t i = 0; i < q_dim; ++i) ASSERT_EQ(out[i], 0.0f) << "padding row, element " << i;
  for (size_t i = q_dim; i < 2 * q_dim; ++i) ASSERT_TRUE(std::isfinite(out[i])) << "valid row, element " << i;
  for (size_t i = 2 * q_dim; i < out.size(); ++i) ASSERT_TRUE(std::isnan(out[i])) << "row " << i / q_dim;
  // Only row 1's slot at position 50 was written.
  const size_t slot = pool.layout.row(1, 50) * pool.kv_dim;
  auto same_but_slot = [&](std::vector<float> after, const std::vector<float>& before) {
    for (size_t i = slot; i < slot + pool.kv_dim; ++i) {
      if (!std::isfinite(after[i])) return false;
      after[i] = before[i];
    }
    return std::equal(after.begin(), after.end(), before.begin(), before.end(),
                      [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); });
  };
  EXPECT_TRUE(same_but_slot(pool.k.download(), k_before));
  EXPECT_TRUE(same_but_slot(pool.v.download(), v_before));
}

TEST_F(CudaDecodeAttention, RejectsSmallWorkspaceBadShapesAndNullInputs) {
  const HeadShape s{8, 2, 128};
  const TestPool pool(s, 1000, {5}, 5, ElementType::BF16);
  AttentionRunner r(s, 1, 1000, 6);
  auto call = [&](const HeadShape& shape, size_t workspace, const float* q, int max_ctx) {
    decode_attention({q, r.k.data(), r.v.data(), int64_t(r.q_dim), int64_t(r.kv_dim), int64_t(r.kv_dim)},
                     r.inv.data(), pool.pool(), {r.pos.data(), nullptr, pool.tables.data(), pool.layout.max_blocks},
                     1, max_ctx, shape, r.workspace.data(), workspace, r.out.data(), nullptr);
  };
  EXPECT_THROW(call(s, r.workspace.size() - 1, r.q.data(), 1000), Error);
  EXPECT_THROW(call({8, 3, 128}, r.workspace.size(), r.q.data(), 1000), Error);
  EXPECT_THROW(call({8, 2, 72}, r.workspace.size(), r.q.data(), 1000), Error);
  EXPECT_THROW(call(s, r.workspace.size(), nullptr, 1000), Error);
  EXPECT_THROW(call(s, r.workspace.size(), r.q.data(), 16 * pool.layout.max_blocks + 1), Error);  // past the tables
}

TEST_F(CudaDecodeAttention, PlanFillsOneWaveAndSizesTheWorkspace) {
  int device = 0, sms = 0;
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (const HeadShape& s : {HeadShape{32, 32, 128}, HeadShape{32, 8, 128}, HeadShape{9, 3, 64},
                             HeadShape{64, 1, 64}, HeadShape{14, 2, 80}, HeadShape{8, 1, 256}}) {
    for (int batch : {1, 3, 64}) {
      for (int max_ctx : {1, 31, 33, 4097, 131072}) {
        const std::string what = describe(s) + " batch " + std::to_string(batch) + " max_ctx " +
                                 std::to_string(max_ctx);
        const DecodeAttentionPlan plan = plan_decode_attention(s, max_ctx, batch);
        const int chunks = (s.n_heads / s.n_kv_heads + 7) / 8;
        EXPECT_EQ(plan.head_chunks, chunks) << what;
        EXPECT_GE(plan.splits, 1) << what;
        EXPECT_LE(plan.splits, std::max(1, (max_ctx + 31) / 32)) << what;
        if (plan.splits > 1) {  // several slices only while they fit one wave of CTAs
          EXPECT_LE(plan.splits * batch * s.n_kv_heads * chunks, 4 * sms) << what;
        }
        // Per-slice results for every row's query heads, then one counter per CTA column.
        EXPECT_EQ(plan.workspace_floats,
                  size_t(batch) * (size_t(s.n_heads) * plan.splits * (s.head_dim + 2) + size_t(s.n_kv_heads) * chunks))
            << what;
      }
    }
  }
}

// The op captured once (as a programmatic dependent launch), replayed for a
// batch of three sequences over shuffled blocks, each at its own position,
// moving on across slice boundaries with new tokens each step (the third a
// padding row until it starts): each replay writes the slots and the output
// a fresh launch (zeroed workspace, a twin pool) writes, bit for bit (the
// merge adds the slices in a fixed order).
TEST_P(CudaDecodeAttentionTyped, GraphReplayGivesWhatFreshLaunchesGive) {
  const HeadShape s{32, 4, 64};
  const int max_ctx = 512, steps = 14;
  const std::vector<int> start = {250, 31, 0};  // rows before them stand for the prompts
  TestPool graphed(s, max_ctx, start, 1234, GetParam()), fresh(s, max_ctx, start, 1234, GetParam());
  AttentionRunner runner(s, 3, max_ctx, 1235);
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
    const std::vector<int> pos = {start[0] + step, start[1] + step, step - 2};
    runner.q.upload(random_values(runner.q.size(), 2000 + 3 * step, 2.0f));
    runner.k.upload(random_values(runner.k.size(), 2001 + 3 * step));
    runner.v.upload(random_values(runner.v.size(), 2002 + 3 * step));
    runner.pos.upload(pos);
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
    for (int b = 0; b < 3; ++b) {
      if (pos[b] < 0) continue;
      const size_t slot = graphed.layout.row(b, pos[b]) * graphed.kv_dim;
      EXPECT_TRUE(testutil::same_written_values(graphed.k.download(slot, graphed.kv_dim),
                                                fresh.k.download(slot, fresh.kv_dim))) << what << " row " << b;
      EXPECT_TRUE(testutil::same_written_values(graphed.v.download(slot, graphed.kv_dim),
                                                fresh.v.download(slot, fresh.kv_dim))) << what << " row " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Caches, CudaDecodeAttentionTyped,
                         ::testing::Values(ElementType::BF16, ElementType::F32),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
