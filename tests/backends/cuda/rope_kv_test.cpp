// rope_store_kv against cpu::rope: q rotated in place, k rotated and v copied
// into the bf16 cache row at *d_pos, every other cache row untouched.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/rope_kv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
#include "model/config.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::kPoisonBf16;
using testutil::relative_error;

// Same fp32 formula as the CPU: only the libm cos/sin and FMA contraction differ.
constexpr double kTolerance = 1e-5;

class CudaRopeStoreKv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

std::vector<float> inv_freq_for(int head_dim, bool llama3) {
  ModelConfig c;
  c.head_dim = head_dim;
  if (llama3) {
    c.rope_theta = 500000.0f;
    c.rope_scaling.type = "llama3";
    c.rope_scaling.factor = 8.0f;
  }
  std::vector<float> f(head_dim / 2);
  rope_inv_freq(c, f.data());
  return f;
}

struct OpResult {
  std::vector<float> q;             // after the op
  std::vector<uint16_t> kc, vc;     // whole caches after the op
};

OpResult run_op(const HeadShape& s, int max_ctx, int pos, const std::vector<float>& q,
           const std::vector<float>& k, const std::vector<float>& v, const std::vector<float>& inv) {
  const size_t kv_dim = size_t(s.n_kv_heads) * s.head_dim;
  DeviceBuffer<float> dq(q.size()), dk(k.size()), dv(v.size()), dinv(inv.size());
  DeviceBuffer<uint16_t> kc(max_ctx * kv_dim), vc(max_ctx * kv_dim);
  DeviceBuffer<int> dpos(1);
  dq.upload(q), dk.upload(k), dv.upload(v), dinv.upload(inv);
  dpos.upload(std::vector<int>{pos});
  testutil::poison(kc), testutil::poison(vc);
  rope_store_kv(dq.data(), dk.data(), dv.data(), dinv.data(), dpos.data(), s,
                {testutil::as_bf16(kc), testutil::as_bf16(vc), max_ctx}, nullptr);
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  return {dq.download(), kc.download(), vc.download()};
}

TEST_F(CudaRopeStoreKv, MatchesCpuRopeAndWritesOnlyTheRowAtPosition) {
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}};
  const int max_ctx = 4097;
  uint64_t seed = 300;
  for (const HeadShape& s : shapes) {
    for (int pos : {0, 1, 37, 1000, max_ctx - 1}) {
      const bool llama3 = pos % 2 == 1;
      const std::string what = "heads " + std::to_string(s.n_heads) + "/" +
                               std::to_string(s.n_kv_heads) + " hd " + std::to_string(s.head_dim) +
                               " pos " + std::to_string(pos);
      const size_t q_dim = size_t(s.n_heads) * s.head_dim, kv_dim = size_t(s.n_kv_heads) * s.head_dim;
      const std::vector<float> inv = inv_freq_for(s.head_dim, llama3);
      const std::vector<float> q = fsvd::testing::random_normal(q_dim, ++seed);
      const std::vector<float> k = fsvd::testing::random_normal(kv_dim, ++seed);
      const std::vector<float> v = fsvd::testing::random_normal(kv_dim, ++seed);
      const OpResult got = run_op(s, max_ctx, pos, q, k, v, inv);

      std::vector<float> q_ref = q, k_ref = k;
      cpu::rope(q_ref.data(), 1, q_dim, s.n_heads, s.head_dim, pos, inv.data());
      cpu::rope(k_ref.data(), 1, kv_dim, s.n_kv_heads, s.head_dim, pos, inv.data());
      EXPECT_LT(relative_error(got.q, q_ref), kTolerance) << what;

      size_t bad_k = 0, bad_v = 0, touched = 0;
      for (size_t i = 0; i < kv_dim; ++i) {
        // Within a bf16 rounding (2^-8 relative) of the fp32 rotation; a
        // wrong pair, angle or head is off by O(1).
        const float kg = bf16_to_f32(got.kc[pos * kv_dim + i]);
        bad_k += !(std::fabs(kg - k_ref[i]) <= std::ldexp(std::fabs(k_ref[i]), -8) * (1 + 1e-4));
        bad_v += got.vc[pos * kv_dim + i] != f32_to_bf16(v[i]);
      }
      for (size_t i = 0; i < got.kc.size(); ++i) {
        if (i / kv_dim == size_t(pos)) continue;
        touched += got.kc[i] != kPoisonBf16 || got.vc[i] != kPoisonBf16;
      }
      EXPECT_EQ(bad_k, 0u) << what;
      EXPECT_EQ(bad_v, 0u) << what;
      EXPECT_EQ(touched, 0u) << what;
    }
  }
}

TEST_F(CudaRopeStoreKv, PositionOutsideCacheWritesNothingAndPoisonsQ) {
  const HeadShape s{9, 3, 64};
  const int max_ctx = 50;
  const std::vector<float> inv = inv_freq_for(s.head_dim, false);
  const std::vector<float> q = fsvd::testing::random_normal(9 * 64, 7);
  const std::vector<float> kv = fsvd::testing::random_normal(3 * 64, 8);
  for (int pos : {-1, max_ctx, 1 << 30}) {
    const OpResult got = run_op(s, max_ctx, pos, q, kv, kv, inv);
    for (float x : got.q) ASSERT_TRUE(std::isnan(x)) << "pos " << pos;
    for (size_t i = 0; i < got.kc.size(); ++i)
      ASSERT_TRUE(got.kc[i] == kPoisonBf16 && got.vc[i] == kPoisonBf16) << "pos " << pos;
  }
}

TEST(CudaRopeStoreKvArgs, RejectsUnsupportedShapesBeforeLaunching) {
  // Fake but aligned pointers: validation must throw before any device access.
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  const int* pos = reinterpret_cast<const int*>(uintptr_t{256});
  const KvCacheLayer cache{reinterpret_cast<__nv_bfloat16*>(uintptr_t{256}),
                           reinterpret_cast<__nv_bfloat16*>(uintptr_t{512}), 16};
  EXPECT_THROW(rope_store_kv(f, f, f, f, pos, {8, 8, 96}, cache, nullptr), Error);
  EXPECT_THROW(rope_store_kv(f, f, f, f, pos, {9, 2, 64}, cache, nullptr), Error);
  EXPECT_THROW(rope_store_kv(f, f, f, f, pos, {8, 8, 64}, {cache.k, cache.v, 0}, nullptr), Error);
  EXPECT_THROW(rope_store_kv(f, f, f, nullptr, pos, {8, 8, 64}, cache, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
