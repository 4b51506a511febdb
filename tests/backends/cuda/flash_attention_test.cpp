// What the op table (backends/op_table) does not check of the flash
// attention kernel: a prompt in two chunks through rope_store_kv_rows and
// prefill_attention continues the cached prompt, and the arguments
// prefill_attention and packed_attention refuse.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/flash_attention.h"

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
  testutil::DeviceCache cache(s, total + 5);
  DeviceBuffer<uint16_t> q_out(total * q_dim), out(total * q_dim);
  testutil::poison(out);
  const std::pair<int, int> chunks[] = {{0, n1}, {n1, n2}};  // (pos, n)
  for (const auto& [pos, n] : chunks) {
    const float* rows = dqkv.data() + pos * ld;
    const int64_t l = static_cast<int64_t>(ld);
    rope_store_kv_rows({rows, rows + q_dim, rows + q_dim + kv_dim, l, l, l}, dinv.data(), cache.pages.chunk(pos), n,
                       s, cache.layer(), testutil::as_bf16(q_out) + pos * q_dim, nullptr);
    prefill_attention(testutil::as_bf16(q_out) + pos * q_dim, cache.layer(), nullptr, pos, n, s,
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
  cpu::attention(q.data(), q_dim, {k.data(), v.data(), kv_dim}, total, 0,
                 {s.n_heads, s.n_kv_heads, s.head_dim}, ref.data());
  // Library and device sin/cos may differ in the last fp32 bit, which can move
  // a rounded q or k value by one bf16 step: well inside the bound.
  EXPECT_LT(relative_error(got, ref), kTolerance);
}

TEST(CudaPrefillAttentionArgs, RejectsBadArgumentsBeforeLaunching) {
  // Fake but aligned pointers: validation must throw before any device access.
  __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{1024});
  const KvCacheLayer cache{reinterpret_cast<void*>(uintptr_t{256}), reinterpret_cast<void*>(uintptr_t{512}), 16,
                           6};  // 96 rows
  const HeadShape s{8, 2, 64};
  auto attend = [&](const __nv_bfloat16* q, int pos, int n, const HeadShape& shape) {
    prefill_attention(q, cache, nullptr, pos, n, shape, b, nullptr);
  };
  EXPECT_THROW(attend(b, 95, 2, s), Error);
  EXPECT_THROW(attend(b, 0, 0, s), Error);
  EXPECT_THROW(attend(b, 0, 4, {9, 2, 64}), Error);
  EXPECT_THROW(attend(b, 0, 4, {8, 2, 96}), Error);  // decode attention's head size, not this kernel's
  EXPECT_THROW(attend(b + 1, 0, 4, s), Error);  // misaligned q
  EXPECT_THROW(prefill_attention(b, {cache.k, cache.v, 16, 6, ElementType::F32}, nullptr, 0, 4, s, b, nullptr), Error);
}

TEST(CudaPackedAttentionArgs, RejectsBadArgumentsBeforeLaunching) {
  __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{1024});
  const int32_t* offsets = reinterpret_cast<const int32_t*>(uintptr_t{2048});
  const HeadShape s{2, 2, 64};
  auto attend = [&](PackedRows q, const int32_t* off, int seqs, int max_len, const HeadShape& shape) {
    packed_attention(q, {b, 128}, {b, 128}, off, seqs, max_len, shape, {b, 128}, nullptr);
  };
  EXPECT_THROW(attend({b, 128}, nullptr, 2, 10, s), Error);
  EXPECT_THROW(attend({b, 128}, offsets, 0, 10, s), Error);
  EXPECT_THROW(attend({b, 128}, offsets, 2, 0, s), Error);
  EXPECT_THROW(attend({b, 128}, offsets, 2, 10, {4, 4, 32}), Error);  // head_dim 32: fp32 mode's attention_f32
  EXPECT_THROW(attend({b + 1, 128}, offsets, 2, 10, s), Error);       // misaligned q
  EXPECT_THROW(attend({b, 100}, offsets, 2, 10, s), Error);           // row stride not a multiple of 8
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
