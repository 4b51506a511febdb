// What the op table (backends/op_table) does not check of the prefill ops:
// rope_store_kv_rows writes the cache rows decode_attention writes token by
// token, bit for bit; a prompt in two chunks through both ops continues the
// cached prompt; the arguments they refuse. Cache rows past pos + n are
// poisoned and must never be read.
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
#include "backends/cuda/decode_attention.h"
#include "backends/op_table/inputs.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::relative_error;

// The probabilities rounded to bf16 for the P V product and the output
// rounded to bf16, each a relative error of at most 2^-9 per value (RMS
// 2^-9 / sqrt(3) ~ 1.1e-3), so ~1.6e-3 together. The bound is twice that.
constexpr double kTolerance = 4e-3;

class CudaPrefillAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

std::string describe(const HeadShape& s, int pos, int n) {
  return "heads " + std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) + " hd " +
         std::to_string(s.head_dim) + " pos " + std::to_string(pos) + " n " + std::to_string(n);
}

std::vector<float> to_float(const std::vector<uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = bf16_to_f32(bits[i]);
  return f;
}

// A poisoned bf16 KV cache of max_ctx rows on the device.
struct DeviceCache {
  DeviceBuffer<uint16_t> k, v;
  int max_ctx;
  DeviceCache(const HeadShape& s, int ctx)
      : k(size_t(ctx) * s.n_kv_heads * s.head_dim), v(k.size()), max_ctx(ctx) {
    testutil::poison(k), testutil::poison(v);
  }
  KvCacheLayer layer() { return {k.data(), v.data(), max_ctx}; }
};

TEST_F(CudaPrefillAttention, RopeStoreKvRowsMatchesDecodeStepsBitwise) {
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}};
  const int max_ctx = 1200;
  uint64_t seed = 40;
  for (const HeadShape& s : shapes) {
    // (pos, n, row padding): a padding of 4 keeps rows 16-byte aligned (the
    // 4-pair path), 3 does not (one pair a thread).
    const int cases[][3] = {{0, 1, 4}, {0, 7, 3}, {37, 63, 4}, {1000, 130, 3}};
    for (const auto& [pos, n, pad] : cases) {
      const std::string what = describe(s, pos, n) + " pad " + std::to_string(pad);
      const size_t q_dim = size_t(s.n_heads) * s.head_dim,
                   kv_dim = size_t(s.n_kv_heads) * s.head_dim;
      // q, k, v as column slices of one packed GEMM output with a padded row.
      const size_t ld = q_dim + 2 * kv_dim + pad;
      const std::vector<float> qkv = fsvd::testing::random_normal(n * ld, ++seed);
      const std::vector<float> inv = optable::rope_frequencies(s.head_dim, pos % 2 == 1);
      DeviceBuffer<float> dqkv(qkv.size()), dinv(inv.size());
      dqkv.upload(qkv), dinv.upload(inv);

      DeviceCache rows(s, max_ctx), steps(s, max_ctx);
      DeviceBuffer<uint16_t> q_out(n * q_dim);
      testutil::poison(q_out);
      rope_store_kv_rows(dqkv.data(), ld, dqkv.data() + q_dim, ld, dqkv.data() + q_dim + kv_dim, ld,
                         dinv.data(), pos, n, s, rows.layer(), testutil::as_bf16(q_out), nullptr);
      FSVD_CUDA_CHECK(cudaDeviceSynchronize());

      // The decode twin, one token at a time, writes the same cache rows.
      DeviceBuffer<float> dq(q_dim), dk(kv_dim), dv(kv_dim), att(q_dim);
      DeviceBuffer<float> work(plan_decode_attention(s, max_ctx).workspace_floats);
      work.zero();
      DeviceBuffer<int> dpos(1);
      for (int i = 0; i < n; ++i) {
        const float* row = qkv.data() + i * ld;
        dq.upload({row, q_dim});
        dk.upload({row + q_dim, kv_dim});
        dv.upload({row + q_dim + kv_dim, kv_dim});
        dpos.upload(std::vector<int>{pos + i});
        decode_attention(dq.data(), dk.data(), dv.data(), dinv.data(), steps.layer(), dpos.data(), s,
                         work.data(), work.size(), att.data(), nullptr);
      }
      EXPECT_TRUE(rows.k.download() == steps.k.download()) << what;  // all rows, poison included
      EXPECT_TRUE(rows.v.download() == steps.v.download()) << what;
      // Without v (its rows already stored), k the same.
      DeviceCache k_only(s, max_ctx);
      rope_store_kv_rows(dqkv.data(), ld, dqkv.data() + q_dim, ld, nullptr, 0, dinv.data(), pos, n, s,
                         k_only.layer(), testutil::as_bf16(q_out), nullptr);
      EXPECT_TRUE(k_only.k.download() == steps.k.download()) << what;
    }
  }
}

// A prompt in two chunks through both ops, against the CPU executor's chain
// (rope on q and k, bf16 cache rows, attention) over the whole prompt.
TEST_F(CudaPrefillAttention, SecondChunkContinuesTheCachedPrompt) {
  const HeadShape s{12, 4, 128};
  const int n1 = 100, n2 = 157, total = n1 + n2;
  const size_t q_dim = size_t(s.n_heads) * s.head_dim, kv_dim = size_t(s.n_kv_heads) * s.head_dim;
  const size_t ld = q_dim + 2 * kv_dim;
  const std::vector<float> qkv = fsvd::testing::random_normal(total * ld, 99);
  const std::vector<float> inv = optable::rope_frequencies(s.head_dim, true);
  DeviceBuffer<float> dqkv(qkv.size()), dinv(inv.size());
  dqkv.upload(qkv), dinv.upload(inv);
  DeviceCache cache(s, total + 5);
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
  const std::vector<float> got = to_float(out.download());

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
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{1024});
  const KvCacheLayer cache{reinterpret_cast<void*>(uintptr_t{256}),
                           reinterpret_cast<void*>(uintptr_t{512}), 100};
  const HeadShape s{8, 2, 64};
  const int64_t q_dim = 8 * 64, kv_dim = 2 * 64;
  auto rope = [&](int pos, int n, const HeadShape& shape, int64_t ldq, const KvCacheLayer& c) {
    rope_store_kv_rows(f, ldq, f, kv_dim, f, kv_dim, f, pos, n, shape, c, b, nullptr);
  };
  EXPECT_THROW(rope(90, 11, s, q_dim, cache), Error);  // past max_ctx
  EXPECT_THROW(rope(-1, 5, s, q_dim, cache), Error);
  EXPECT_THROW(rope(0, 0, s, q_dim, cache), Error);
  EXPECT_THROW(rope(0, 5, s, q_dim - 1, cache), Error);  // row stride shorter than a row
  EXPECT_THROW(rope(0, 5, {8, 2, 96}, q_dim, cache), Error);
  EXPECT_THROW(rope(0, 5, s, q_dim, {cache.k, cache.v, 100, ElementType::F32}), Error);

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
