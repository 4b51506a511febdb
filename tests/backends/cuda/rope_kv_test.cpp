// rope_store_kv against cpu::rope: q rotated in place, k rotated and v copied
// into the cache row at *d_pos (bf16 or fp32), every other cache row untouched.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/rope_kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
#include "model/config.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::relative_error;

// Same fp32 formula as the CPU: only the libm cos/sin and FMA contraction differ.
constexpr double kTolerance = 1e-5;

std::string type_name(ElementType t) { return t == ElementType::F32 ? "fp32" : "bf16"; }

class CudaRopeStoreKv : public ::testing::TestWithParam<ElementType> {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// A k or v cache of `type` on the device, every element poisoned (all-ones bits).
struct TestCache {
  ElementType type;
  DeviceBuffer<char> bytes;
  TestCache(ElementType t, size_t n) : type(t), bytes(n * element_bytes(t)) { testutil::poison(bytes); }
  // Each element's bits, widened to 32.
  std::vector<uint32_t> bits() const {
    const std::vector<char> raw = bytes.download();
    std::vector<uint32_t> out(raw.size() / element_bytes(type));
    for (size_t i = 0; i < out.size(); ++i) {
      if (type == ElementType::F32) {
        std::memcpy(&out[i], raw.data() + 4 * i, 4);
      } else {
        uint16_t half = 0;
        std::memcpy(&half, raw.data() + 2 * i, 2);
        out[i] = half;
      }
    }
    return out;
  }
};

uint32_t poison_bits(ElementType t) { return t == ElementType::F32 ? 0xffffffffu : 0xffffu; }
float value_of(ElementType t, uint32_t bits) {
  return t == ElementType::F32 ? std::bit_cast<float>(bits) : bf16_to_f32(static_cast<uint16_t>(bits));
}
uint32_t bits_of(ElementType t, float v) {
  return t == ElementType::F32 ? std::bit_cast<uint32_t>(v) : f32_to_bf16(v);
}

struct OpResult {
  std::vector<float> q;            // after the op
  std::vector<uint32_t> kc, vc;    // bits of the whole caches after the op
};

OpResult run_op(ElementType type, const HeadShape& s, int max_ctx, int pos,
                const std::vector<float>& q, const std::vector<float>& k,
                const std::vector<float>& v, const std::vector<float>& inv) {
  const size_t kv_dim = size_t(s.n_kv_heads) * s.head_dim;
  DeviceBuffer<float> dq(q.size()), dk(k.size()), dv(v.size()), dinv(inv.size());
  TestCache kc(type, max_ctx * kv_dim), vc(type, max_ctx * kv_dim);
  DeviceBuffer<int> dpos(1);
  dq.upload(q), dk.upload(k), dv.upload(v), dinv.upload(inv);
  dpos.upload(std::vector<int>{pos});
  rope_store_kv(dq.data(), dk.data(), dv.data(), dinv.data(), dpos.data(), s,
                {kc.bytes.data(), vc.bytes.data(), max_ctx, type}, nullptr);
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  return {dq.download(), kc.bits(), vc.bits()};
}

TEST_P(CudaRopeStoreKv, MatchesCpuRopeAndWritesOnlyTheRowAtPosition) {
  const ElementType type = GetParam();
  double worst = 0;  // of q and an fp32 k row, reported in the test's properties
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
      const std::vector<float> inv = testutil::inv_freq_for(s.head_dim, llama3);
      const std::vector<float> q = fsvd::testing::random_normal(q_dim, ++seed);
      const std::vector<float> k = fsvd::testing::random_normal(kv_dim, ++seed);
      const std::vector<float> v = fsvd::testing::random_normal(kv_dim, ++seed);
      const OpResult got = run_op(type, s, max_ctx, pos, q, k, v, inv);

      std::vector<float> q_ref = q, k_ref = k;
      cpu::rope(q_ref.data(), 1, q_dim, s.n_heads, s.head_dim, pos, inv.data());
      cpu::rope(k_ref.data(), 1, kv_dim, s.n_kv_heads, s.head_dim, pos, inv.data());
      const double q_err = relative_error(got.q, q_ref);
      EXPECT_LT(q_err, kTolerance) << what;
      worst = std::max(worst, q_err);

      std::vector<float> k_row(kv_dim);
      size_t bad_k = 0, bad_v = 0, touched = 0;
      for (size_t i = 0; i < kv_dim; ++i) {
        k_row[i] = value_of(type, got.kc[pos * kv_dim + i]);
        // bf16: within a rounding (2^-8 relative) of the fp32 rotation; a
        // wrong pair, angle or head is off by O(1).
        bad_k += type == ElementType::BF16 &&
                 !(std::fabs(k_row[i] - k_ref[i]) <= std::ldexp(std::fabs(k_ref[i]), -8) * (1 + 1e-4));
        bad_v += got.vc[pos * kv_dim + i] != bits_of(type, v[i]);
      }
      if (type == ElementType::F32) {  // the rotation itself is stored: as close as q
        const double k_err = relative_error(k_row, k_ref);
        EXPECT_LT(k_err, kTolerance) << what;
        worst = std::max(worst, k_err);
      }
      for (size_t i = 0; i < got.kc.size(); ++i) {
        if (i / kv_dim == size_t(pos)) continue;
        touched += got.kc[i] != poison_bits(type) || got.vc[i] != poison_bits(type);
      }
      EXPECT_EQ(bad_k, 0u) << what;
      EXPECT_EQ(bad_v, 0u) << what;
      EXPECT_EQ(touched, 0u) << what;
    }
  }
  RecordProperty("worst_rel_error", ::testing::PrintToString(worst));
}

TEST_P(CudaRopeStoreKv, PositionOutsideCacheWritesNothingAndPoisonsQ) {
  const ElementType type = GetParam();
  const HeadShape s{9, 3, 64};
  const int max_ctx = 50;
  const std::vector<float> inv = testutil::inv_freq_for(s.head_dim, false);
  const std::vector<float> q = fsvd::testing::random_normal(9 * 64, 7);
  const std::vector<float> kv = fsvd::testing::random_normal(3 * 64, 8);
  for (int pos : {-1, max_ctx, 1 << 30}) {
    const OpResult got = run_op(type, s, max_ctx, pos, q, kv, kv, inv);
    for (float x : got.q) ASSERT_TRUE(std::isnan(x)) << "pos " << pos;
    for (size_t i = 0; i < got.kc.size(); ++i)
      ASSERT_TRUE(got.kc[i] == poison_bits(type) && got.vc[i] == poison_bits(type)) << "pos " << pos;
  }
}

INSTANTIATE_TEST_SUITE_P(Caches, CudaRopeStoreKv,
                         ::testing::Values(ElementType::BF16, ElementType::F32),
                         [](const auto& info) { return type_name(info.param); });

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
