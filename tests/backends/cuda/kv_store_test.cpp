// What the op table (backends/op_table) does not check of the KV-cache row
// stores: rope_store_kv_rows writes the cache rows decode_attention writes
// token by token or for a batch, bit for bit (poisoned rows not written stay
// so), and the arguments it refuses.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/kv_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}, {6, 2, 80}, {12, 4, 96}, {4, 2, 256}};
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
      const QkvRows packed{dqkv.data(), dqkv.data() + q_dim, dqkv.data() + q_dim + kv_dim,
                           int64_t(ld), int64_t(ld), int64_t(ld)};

      testutil::DeviceCache rows(s, max_ctx), steps(s, max_ctx);
      DeviceBuffer<uint16_t> q_out(n * q_dim);
      testutil::poison(q_out);
      rope_store_kv_rows(packed, dinv.data(), rows.pages.chunk(pos), n, s, rows.layer(), testutil::as_bf16(q_out),
                         nullptr);
      FSVD_CUDA_CHECK(cudaDeviceSynchronize());

      // The decode twin, one token at a time, writes the same cache rows.
      DeviceBuffer<float> dq(q_dim), dk(kv_dim), dv(kv_dim), att(q_dim);
      DeviceBuffer<float> work(plan_decode_attention(s, max_ctx, 1).workspace_floats);
      work.zero();
      DeviceBuffer<int> dpos(1);
      for (int i = 0; i < n; ++i) {
        const float* row = qkv.data() + i * ld;
        dq.upload({row, q_dim});
        dk.upload({row + q_dim, kv_dim});
        dv.upload({row + q_dim + kv_dim, kv_dim});
        dpos.upload(std::vector<int>{pos + i});
        decode_attention({dq.data(), dk.data(), dv.data(), int64_t(q_dim), int64_t(kv_dim), int64_t(kv_dim)},
                         dinv.data(), steps.layer(), steps.pages.token(dpos.data()), 1, max_ctx, s, work.data(),
                         work.size(), att.data(), nullptr);
      }
      EXPECT_TRUE(rows.k.download() == steps.k.download()) << what;  // all rows, poison included
      EXPECT_TRUE(rows.v.download() == steps.v.download()) << what;
      // Without v (its rows already stored), k the same.
      testutil::DeviceCache k_only(s, max_ctx);
      rope_store_kv_rows({packed.q, packed.k, nullptr, packed.ldq, packed.ldk, 0}, dinv.data(),
                         k_only.pages.chunk(pos), n, s, k_only.layer(), testutil::as_bf16(q_out), nullptr);
      EXPECT_TRUE(k_only.k.download() == steps.k.download()) << what;
    }
  }
}

// A batched decode step over shuffled blocks writes the slots
// rope_store_kv_rows writes for the same rows (a padding row: none), in
// bf16 and fp32 pools, bit for bit.
TEST_F(CudaKvStore, RopeStoreKvRowsMatchesABatchedDecodeStepBitwise) {
  const HeadShape s{12, 4, 96};
  const int max_ctx = 700;
  const std::vector<int> pos = {0, 650, -1, 17, 64};
  const int batch = static_cast<int>(pos.size());
  const size_t q_dim = size_t(s.n_heads) * s.head_dim, kv_dim = size_t(s.n_kv_heads) * s.head_dim;
  const size_t ld = q_dim + 2 * kv_dim + 4;
  const optable::PagedLayout layout(std::vector<int>(batch, max_ctx), 64, max_ctx, true);
  DeviceBuffer<float> rows = optable::to_device(fsvd::testing::random_normal(batch * ld, 7));
  DeviceBuffer<float> inv = optable::to_device(optable::rope_frequencies(s.head_dim, true));
  DeviceBuffer<int> dpos = optable::to_device(pos);
  DeviceBuffer<int32_t> tables = optable::to_device(layout.tables);
  const QkvRows packed{rows.data(), rows.data() + q_dim, rows.data() + q_dim + kv_dim,
                       int64_t(ld), int64_t(ld), int64_t(ld)};
  const PagedRows paged{dpos.data(), nullptr, tables.data(), layout.max_blocks};
  for (ElementType type : {ElementType::BF16, ElementType::F32}) {
    const size_t pool_values = layout.pool_rows() * kv_dim;
    optable::DeviceArray k_store(pool_values, type), v_store(pool_values, type), k_step(pool_values, type),
        v_step(pool_values, type);  // NaN
    const auto pool = [&](const optable::DeviceArray& k, const optable::DeviceArray& v) {
      return KvCacheLayer{k.data(), v.data(), layout.block_size, layout.num_blocks, type};
    };
    rope_store_kv_rows({nullptr, packed.k, packed.v, 0, packed.ldk, packed.ldv}, inv.data(), paged, batch, s,
                       pool(k_store, v_store), nullptr, nullptr);
    DeviceBuffer<float> work(plan_decode_attention(s, max_ctx, batch).workspace_floats), att(batch * q_dim);
    work.zero();
    decode_attention(packed, inv.data(), pool(k_step, v_step), paged, batch, max_ctx, s, work.data(), work.size(),
                     att.data(), nullptr);
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> k = k_store.download(), v = v_store.download();
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    EXPECT_TRUE(same_bits(k, k_step.download())) << static_cast<int>(type);
    EXPECT_TRUE(same_bits(v, v_step.download())) << static_cast<int>(type);
    // Exactly the valid rows' slots were written.
    size_t written = 0;
    for (float x : k) written += !std::isnan(x);
    EXPECT_EQ(written, (pos.size() - 1) * kv_dim);
  }
}

TEST(CudaKvStoreArgs, RejectsBadArgumentsBeforeLaunching) {
  // Fake but aligned pointers: validation must throw before any device access.
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int* i = reinterpret_cast<int*>(uintptr_t{512});
  __nv_bfloat16* b = reinterpret_cast<__nv_bfloat16*>(uintptr_t{1024});
  const KvCacheLayer cache{reinterpret_cast<void*>(uintptr_t{256}), reinterpret_cast<void*>(uintptr_t{512}), 16, 7};
  const PagedRows rows{i, nullptr, i, 7};
  const HeadShape s{8, 2, 64};
  const int64_t q_dim = 8 * 64, kv_dim = 2 * 64;
  auto rope = [&](int n, const HeadShape& shape, int64_t ldq, const KvCacheLayer& c, const PagedRows& r) {
    rope_store_kv_rows({f, f, f, ldq, kv_dim, kv_dim}, f, r, n, shape, c, b, nullptr);
  };
  EXPECT_THROW(rope(0, s, q_dim, cache, rows), Error);
  EXPECT_THROW(rope(5, s, q_dim - 1, cache, rows), Error);  // row stride shorter than a row
  EXPECT_THROW(rope(5, {8, 2, 72}, q_dim, cache, rows), Error);
  EXPECT_THROW(rope(5, s, q_dim, {cache.k, cache.v, 24, 7}, rows), Error);  // block size not a power of two
  EXPECT_THROW(rope(5, s, q_dim, {cache.k, cache.v, 8, 7}, rows), Error);   // below 16
  EXPECT_THROW(rope(5, s, q_dim, cache, {nullptr, nullptr, i, 7}), Error);
  EXPECT_THROW(rope(5, s, q_dim, cache, {i, nullptr, i, 0}), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
