// What the op table (backends/op_table) does not check of the KV-cache row
// stores: rope_store_kv_rows writes the cache rows decode_attention writes
// token by token, bit for bit (poisoned rows not written stay so), and the
// arguments it refuses.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/kv_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/decode_attention.h"
#include "backends/cuda/decode_test_util.h"
#include "backends/op_table/inputs.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

class CudaKvStore : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaKvStore, RopeStoreKvRowsMatchesDecodeStepsBitwise) {
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}};
  const int max_ctx = 1200;
  uint64_t seed = 40;
  for (const HeadShape& s : shapes) {
    // (pos, n, row padding): a padding of 4 keeps rows 16-byte aligned (the
    // 4-pair path), 3 does not (one pair a thread).
    const int cases[][3] = {{0, 1, 4}, {0, 7, 3}, {37, 63, 4}, {1000, 130, 3}};
    for (const auto& [pos, n, pad] : cases) {
      const std::string what = testutil::describe(s, pos, n) + " pad " + std::to_string(pad);
      const size_t q_dim = size_t(s.n_heads) * s.head_dim,
                   kv_dim = size_t(s.n_kv_heads) * s.head_dim;
      // q, k, v as column slices of one packed GEMM output with a padded row.
      const size_t ld = q_dim + 2 * kv_dim + pad;
      const std::vector<float> qkv = fsvd::testing::random_normal(n * ld, ++seed);
      const std::vector<float> inv = optable::rope_frequencies(s.head_dim, pos % 2 == 1);
      DeviceBuffer<float> dqkv(qkv.size()), dinv(inv.size());
      dqkv.upload(qkv), dinv.upload(inv);

      testutil::DeviceCache rows(s, max_ctx), steps(s, max_ctx);
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
      testutil::DeviceCache k_only(s, max_ctx);
      rope_store_kv_rows(dqkv.data(), ld, dqkv.data() + q_dim, ld, nullptr, 0, dinv.data(), pos, n, s,
                         k_only.layer(), testutil::as_bf16(q_out), nullptr);
      EXPECT_TRUE(k_only.k.download() == steps.k.download()) << what;
    }
  }
}

TEST(CudaKvStoreArgs, RejectsBadArgumentsBeforeLaunching) {
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
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
