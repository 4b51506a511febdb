// prefill_attention against cpu::attention on the same bf16 values, for GQA
// groups 1/3/4/8, head_dim 64 and 128, odd n and pos 0 and > 0; a prompt in
// two chunks through rope_store_kv_rows and prefill_attention. Cache rows past pos + n are
// poisoned and must never be read; the outputs are poisoned and must be
// written in full.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/prefill_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "backends/cuda/kv_store.h"
#include "core/error.h"
#include "model/config.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::relative_error;

// The kernel sees the same bf16 q, k, v as the fp32 twin; what differs is
// the probabilities rounded to bf16 for the P V product and the output
// rounded to bf16, each a relative error of at most 2^-9 per value (RMS
// 2^-9 / sqrt(3) ~ 1.1e-3), so ~1.6e-3 together. The bound is twice that.
// A row is held to 1e-2: a key lost or added at the diagonal moves a row of
// L keys by ~1/L, far above it for the short rows that pos 0 produces.
constexpr double kTolerance = 4e-3;
constexpr double kRowTolerance = 1e-2;

class CudaPrefillAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// Runs prefill_attention on random bf16 q and cache rows [0, pos + n) (rows
// past them poisoned) and checks it against the CPU twin on the same values.
void expect_matches_cpu(const HeadShape& s, int pos, int n, uint64_t seed) {
  const std::string what = testutil::describe(s, pos, n);
  const int max_ctx = pos + n + 9;
  const size_t q_dim = size_t(s.n_heads) * s.head_dim, kv_dim = size_t(s.n_kv_heads) * s.head_dim;
  std::vector<float> q = fsvd::testing::random_normal(n * q_dim, seed, 2.0f);
  std::vector<float> k = fsvd::testing::random_normal((pos + n) * kv_dim, seed + 1);
  std::vector<float> v = fsvd::testing::random_normal((pos + n) * kv_dim, seed + 2);
  testutil::DeviceCache cache(s, max_ctx);
  DeviceBuffer<uint16_t> dq(q.size()), out(q.size());
  dq.upload(testutil::round_to_bf16(q));
  cache.k.upload(testutil::round_to_bf16(k));
  cache.v.upload(testutil::round_to_bf16(v));
  testutil::poison(out);
  prefill_attention(testutil::as_bf16(dq), cache.layer(), pos, n, s, testutil::as_bf16(out),
                    nullptr);
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = testutil::to_float(out.download());

  std::vector<float> ref(q.size());
  cpu::attention(q.data(), q_dim, k.data(), v.data(), n, pos, {s.n_heads, s.n_kv_heads, s.head_dim},
                 ref.data());
  EXPECT_LT(relative_error(got, ref), kTolerance) << what;
  int bad_rows = 0;
  for (int i = 0; i < n; ++i)
    bad_rows +=
        !(relative_error(got.data() + i * q_dim, ref.data() + i * q_dim, q_dim) < kRowTolerance);
  EXPECT_EQ(bad_rows, 0) << what;
}

TEST_F(CudaPrefillAttention, MatchesCpuOnBf16InputsForOddLengthsAndOffsets) {
  // GQA groups 1, 3, 4 and 8 with both head sizes.
  const HeadShape shapes[] = {{4, 4, 128},  {8, 8, 64},  {9, 3, 128}, {12, 3, 64},
                              {32, 8, 128}, {32, 4, 64}, {16, 2, 128}};
  uint64_t seed = 700;
  for (const HeadShape& s : shapes)
    for (int pos : {0, 100})  // 100: a second chunk whose start is on no tile boundary
      for (int n : {1, 7, 63, 130, 257}) expect_matches_cpu(s, pos, n, seed += 3);
}

// Few heads and short prompts run 64-query tiles; 32 heads of 1300 queries
// (352 tiles of 128) run 128-query tiles on any GPU of up to 176 SMs.
TEST_F(CudaPrefillAttention, MatchesCpuAcrossManyTiles) {
  expect_matches_cpu({8, 2, 128}, 0, 1000, 11);
  expect_matches_cpu({4, 1, 64}, 2000, 777, 12);
  expect_matches_cpu({6, 3, 128}, 1531, 300, 13);
  expect_matches_cpu({32, 8, 128}, 0, 1300, 14);
  expect_matches_cpu({32, 4, 64}, 100, 1300, 15);
  expect_matches_cpu({32, 32, 128}, 333, 1300, 16);
}

// A prompt in two chunks through both ops, against the CPU executor's chain
// (rope on q and k, bf16 cache rows, attention) over the whole prompt.
TEST_F(CudaPrefillAttention, SecondChunkContinuesTheCachedPrompt) {
  const HeadShape s{12, 4, 128};
  const int n1 = 100, n2 = 157, total = n1 + n2;
  const size_t q_dim = size_t(s.n_heads) * s.head_dim, kv_dim = size_t(s.n_kv_heads) * s.head_dim;
  const size_t ld = q_dim + 2 * kv_dim;
  const std::vector<float> qkv = fsvd::testing::random_normal(total * ld, 99);
  const std::vector<float> inv = testutil::inv_freq_for(s.head_dim, true);
  DeviceBuffer<float> dqkv(qkv.size()), dinv(inv.size());
  dqkv.upload(qkv), dinv.upload(inv);
  testutil::DeviceCache cache(s, total + 5);
  DeviceBuffer<uint16_t> q_out(total * q_dim), out(total * q_dim);
  testutil::poison(out);
  const std::pair<int, int> chunks[] = {{0, n1}, {n1, n2}};  // (pos, n)
  for (const auto& [pos, n] : chunks) {
    const float* rows = dqkv.data() + pos * ld;
    rope_store_kv_rows(rows, ld, rows + q_dim, ld, rows + q_dim + kv_dim, ld, dinv.data(), pos, n,
                       s, cache.layer(), testutil::as_bf16(q_out) + pos * q_dim, nullptr);
    prefill_attention(testutil::as_bf16(q_out) + pos * q_dim, cache.layer(), pos, n, s,
                      testutil::as_bf16(out) + pos * q_dim, nullptr);
  }
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = testutil::to_float(out.download());

  std::vector<float> q(total * q_dim), k(total * kv_dim), v(total * kv_dim);
  for (int i = 0; i < total; ++i) {
    const float* row = qkv.data() + i * ld;
    std::copy(row, row + q_dim, q.begin() + i * q_dim);
    std::copy(row + q_dim, row + q_dim + kv_dim, k.begin() + i * kv_dim);
    std::copy(row + q_dim + kv_dim, row + ld, v.begin() + i * kv_dim);
  }
  cpu::rope(q.data(), total, q_dim, s.n_heads, s.head_dim, 0, inv.data());
  cpu::rope(k.data(), total, kv_dim, s.n_kv_heads, s.head_dim, 0, inv.data());
  testutil::round_to_bf16(q), testutil::round_to_bf16(k), testutil::round_to_bf16(v);
  std::vector<float> ref(total * q_dim);
  cpu::attention(q.data(), q_dim, k.data(), v.data(), total, 0,
                 {s.n_heads, s.n_kv_heads, s.head_dim}, ref.data());
  // Library and device sin/cos may differ in the last fp32 bit, which can move
  // a rounded q or k value by one bf16 step: well inside the bound.
  EXPECT_LT(relative_error(got, ref), kTolerance);
}

TEST(CudaPrefillAttentionArgs, RejectsBadArgumentsBeforeLaunching) {
  // Fake but aligned pointers: validation must throw before any device access.
  __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{1024});
  const KvCacheLayer cache{reinterpret_cast<void*>(uintptr_t{256}),
                           reinterpret_cast<void*>(uintptr_t{512}), 100};
  const HeadShape s{8, 2, 64};
  auto attend = [&](const __nv_bfloat16* q, int pos, int n, const HeadShape& shape) {
    prefill_attention(q, cache, pos, n, shape, b, nullptr);
  };
  EXPECT_THROW(attend(b, 99, 2, s), Error);
  EXPECT_THROW(attend(b, 0, 0, s), Error);
  EXPECT_THROW(attend(b, 0, 4, {9, 2, 64}), Error);
  EXPECT_THROW(attend(b + 1, 0, 4, s), Error);  // misaligned q
  EXPECT_THROW(prefill_attention(b, {cache.k, cache.v, 100, ElementType::F32}, 0, 4, s, b, nullptr),
               Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
