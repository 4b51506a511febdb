// decode_attention against the CPU twins (cpu::rope, then cpu::attention on
// the values the cache holds: bf16-rounded, or exact fp32), for GQA ratios
// 1..16, head_dim 64 and 128 and lengths spanning one to many KV slices: the
// token's k and v land in the cache row at its position (RoPE'd k, rounded
// as stored) and nowhere else; rows past the position are poisoned and must
// never be read. Also the op captured once in a CUDA graph and replayed
// while the cache grows (the slice-arrival counters must reset each launch).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/decode_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
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

// The host copy of a cache row as the device holds it.
std::vector<float> device_row(const DeviceBuffer<char>& cache, const TestCache& c, int row) {
  const size_t bytes = c.kv_dim * element_bytes(c.type);
  std::vector<char> raw(bytes);
  FSVD_CUDA_CHECK(cudaMemcpy(raw.data(), cache.data() + row * bytes, bytes, cudaMemcpyDeviceToHost));
  std::vector<float> out(c.kv_dim);
  for (size_t i = 0; i < c.kv_dim; ++i) {
    if (c.type == ElementType::F32) {
      std::memcpy(&out[i], raw.data() + 4 * i, 4);
    } else {
      uint16_t bits = 0;
      std::memcpy(&bits, raw.data() + 2 * i, 2);
      out[i] = bf16_to_f32(bits);
    }
  }
  return out;
}

// One token's q, k, v (before RoPE) and the op's buffers.
struct AttentionRunner {
  HeadShape shape;
  std::vector<float> inv, q, k, v;
  DeviceBuffer<float> dq, dk, dv, dinv, out, workspace;
  DeviceBuffer<int> pos{1};

  AttentionRunner(const HeadShape& s, int max_ctx, uint64_t seed)
      : shape(s), inv(testutil::inv_freq_for(s.head_dim, false)),
        q(fsvd::testing::random_normal(size_t(s.n_heads) * s.head_dim, seed, 2.0f)),
        k(fsvd::testing::random_normal(size_t(s.n_kv_heads) * s.head_dim, seed + 1)),
        v(fsvd::testing::random_normal(k.size(), seed + 2)),
        dq(q.size()), dk(k.size()), dv(v.size()), dinv(inv.size()), out(q.size()),
        workspace(plan_decode_attention(s, max_ctx).workspace_floats) {
    dq.upload(q), dk.upload(k), dv.upload(v), dinv.upload(inv);
    workspace.zero();
  }
  void launch(TestCache& cache, cudaStream_t stream, bool pdl) {
    decode_attention(dq.data(), dk.data(), dv.data(), dinv.data(), cache.layer(), pos.data(), shape,
                     workspace.data(), workspace.size(), out.data(), stream, pdl);
  }
  // Runs the op at position p (the output poisoned beforehand).
  std::vector<float> run(TestCache& cache, int p, bool pdl = false) {
    pos.upload(std::vector<int>{p});
    testutil::poison(out);
    launch(cache, nullptr, pdl);
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    return out.download();
  }
  // The CPU twin at position p: RoPE'd q over the cache the host mirrors.
  std::vector<float> expected(const TestCache& c, int p) const {
    std::vector<float> q_rot = q, ref(q.size());
    cpu::rope(q_rot.data(), 1, q_rot.size(), shape.n_heads, shape.head_dim, p, inv.data());
    cpu::attention(q_rot.data(), q_rot.size(), c.k.data(), c.v.data(), 1, p,
                   {shape.n_heads, shape.n_kv_heads, shape.head_dim}, ref.data());
    return ref;
  }
};

// The op wrote the token's row p: RoPE'd k and v as the cache stores them
// (the GPU's sin/cos may move a bf16 rounding by one step). Mirrors the row
// into the host copy, so the CPU twin attends to what the device holds.
void expect_token_row_and_adopt(TestCache& cache, const AttentionRunner& r, int p, const std::string& what) {
  std::vector<float> k_rot = r.k, v_row = r.v;
  cpu::rope(k_rot.data(), 1, k_rot.size(), r.shape.n_kv_heads, r.shape.head_dim, p, r.inv.data());
  if (cache.type == ElementType::BF16) testutil::round_to_bf16(k_rot), testutil::round_to_bf16(v_row);
  const std::vector<float> k_got = device_row(cache.dk, cache, p), v_got = device_row(cache.dv, cache, p);
  EXPECT_LT(relative_error(k_got, k_rot), cache.type == ElementType::F32 ? 1e-6 : 2e-3) << what;
  EXPECT_TRUE(v_got == v_row) << what;
  std::copy(k_got.begin(), k_got.end(), cache.k.begin() + p * cache.kv_dim);
  std::copy(v_got.begin(), v_got.end(), cache.v.begin() + p * cache.kv_dim);
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
    AttentionRunner runner(s, max_ctx, seed += 3);
    // Longest first, so each step only has to poison more rows; the token's
    // own row is poisoned too: the op must take it from k and v, not the cache.
    for (int len : {4097, 1000, 257, 256, 255, 37, 2, 1}) {
      const std::string what = describe(s) + " len " + std::to_string(len);
      cache.poison_from(len - 1);
      const std::vector<float> got = runner.run(cache, len - 1, len % 2 == 1);
      expect_token_row_and_adopt(cache, runner, len - 1, what);
      const double err = relative_error(got, runner.expected(cache, len - 1));
      EXPECT_LT(err, tolerance(type)) << what;
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
  AttentionRunner runner(s, max_ctx, 901);
  for (int len = max_ctx; len >= 1; --len) {
    cache.poison_from(len - 1);
    const std::vector<float> got = runner.run(cache, len - 1);
    expect_token_row_and_adopt(cache, runner, len - 1, "len " + std::to_string(len));
    ASSERT_LT(relative_error(got, runner.expected(cache, len - 1)), tolerance(type)) << "len " << len;
  }
}

TEST_P(CudaDecodeAttentionTyped, PositionOutsideCacheGivesNaNAndWritesNoRow) {
  const ElementType type = GetParam();
  const HeadShape s{8, 2, 128};
  const int max_ctx = 100;
  TestCache cache(s, max_ctx, 77, type);
  AttentionRunner runner(s, max_ctx, 78);
  const std::vector<char> k_before = cache.dk.download(), v_before = cache.dv.download();
  for (int pos : {-1, max_ctx, 1 << 30})
    for (float x : runner.run(cache, pos)) ASSERT_TRUE(std::isnan(x)) << "pos " << pos;
  EXPECT_TRUE(cache.dk.download() == k_before);
  EXPECT_TRUE(cache.dv.download() == v_before);
}

TEST_F(CudaDecodeAttention, RejectsSmallWorkspaceBadShapesAndNullInputs) {
  const HeadShape s{8, 2, 128};
  TestCache cache(s, 1000, 5, ElementType::BF16);
  AttentionRunner r(s, 1000, 6);
  auto call = [&](const HeadShape& shape, size_t workspace, const float* q) {
    decode_attention(q, r.dk.data(), r.dv.data(), r.dinv.data(), cache.layer(), r.pos.data(), shape,
                     r.workspace.data(), workspace, r.out.data(), nullptr);
  };
  EXPECT_THROW(call(s, r.workspace.size() - 1, r.dq.data()), Error);
  EXPECT_THROW(call({8, 3, 128}, r.workspace.size(), r.dq.data()), Error);
  EXPECT_THROW(call({8, 2, 80}, r.workspace.size(), r.dq.data()), Error);
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
// successive positions across slice boundaries with a new token each step,
// each compared with the CPU twin.
TEST_P(CudaDecodeAttentionTyped, GraphReplayFollowsTheGrowingCache) {
  const ElementType type = GetParam();
  const HeadShape s{32, 4, 64};
  const int max_ctx = 512, prefill = 250, steps = 14;
  TestCache cache(s, max_ctx, 1234, type);  // rows < prefill stand for the prompt
  cache.poison_from(prefill);
  AttentionRunner runner(s, max_ctx, 1235);
  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  runner.launch(cache, stream, true);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (int step = 0; step < steps; ++step) {
    const int pos = prefill + step;
    runner.q = fsvd::testing::random_normal(runner.q.size(), 2000 + 3 * step, 2.0f);
    runner.k = fsvd::testing::random_normal(runner.k.size(), 2001 + 3 * step);
    runner.v = fsvd::testing::random_normal(runner.v.size(), 2002 + 3 * step);
    runner.dq.upload(runner.q), runner.dk.upload(runner.k), runner.dv.upload(runner.v);
    runner.pos.upload(std::vector<int>{pos});
    testutil::poison(runner.out);
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::string what = "step " + std::to_string(step);
    expect_token_row_and_adopt(cache, runner, pos, what);
    EXPECT_LT(relative_error(runner.out.download(), runner.expected(cache, pos)), tolerance(type)) << what;
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
