// embedding_lookup, rmsnorm and argmax against plain CPU versions (cpu::rmsnorm
// for the norm) on odd sizes, with poisoned outputs; publish_token into mapped
// host memory.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/small_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::relative_error;

class CudaSmallOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// bf16 and fp32 tables, rows packed or padded (the padding is NaN).
TEST_F(CudaSmallOps, EmbeddingLookupCopiesTheRowOfTheDeviceToken) {
  for (ElementType type : {ElementType::BF16, ElementType::F32}) {
    for (int64_t hidden : {1, 777, 4096}) {
      for (int64_t pad : {0, 3}) {
        const int64_t vocab = 1001, ld = hidden + pad;
        std::vector<float> table = fsvd::testing::random_normal(vocab * ld, 40 + hidden);
        for (int64_t r = 0; r < vocab; ++r)
          for (int64_t i = hidden; i < ld; ++i) table[r * ld + i] = std::nanf("");
        DeviceBuffer<uint16_t> bf16(type == ElementType::BF16 ? table.size() : 0);
        DeviceBuffer<float> f32(type == ElementType::F32 ? table.size() : 0);
        if (type == ElementType::BF16)
          bf16.upload(testutil::round_to_bf16(table));
        else
          f32.upload(table);
        const void* data = type == ElementType::F32 ? static_cast<const void*>(f32.data()) : bf16.data();
        DeviceBuffer<int32_t> token(1);
        DeviceBuffer<float> x(hidden);
        for (int32_t t : {0, 500, 1000, -1, 1001}) {
          const std::string what = std::string(type == ElementType::F32 ? "fp32" : "bf16") +
                                   " hidden " + std::to_string(hidden) + " ld " + std::to_string(ld) +
                                   " token " + std::to_string(t);
          token.upload(std::vector<int32_t>{t});
          testutil::poison(x);
          embedding_lookup({data, vocab, hidden, ld, type}, token.data(), 1, x.data(), nullptr);
          const std::vector<float> got = x.download();
          for (int64_t i = 0; i < hidden; ++i) {
            if (t < 0 || t >= vocab)
              ASSERT_TRUE(std::isnan(got[i])) << what << " index " << i;
            else
              ASSERT_EQ(got[i], table[t * ld + i]) << what << " index " << i;
          }
        }
      }
    }
  }
}

TEST_F(CudaSmallOps, EmbeddingLookupGathersManyRows) {
  const int64_t vocab = 101, hidden = 77, ld = 80;
  std::vector<float> table = testing::random_normal(vocab * ld, 6);
  std::vector<float> rounded = table;
  const std::vector<uint16_t> bits = testutil::round_to_bf16(rounded);
  DeviceBuffer<float> f32(table.size());
  f32.upload(table);
  DeviceBuffer<uint16_t> bf(bits.size());
  bf.upload(bits);
  const std::vector<int32_t> ids{0, 100, 7, -1, 101, 7};
  DeviceBuffer<int32_t> dids(ids.size());
  dids.upload(ids);
  for (ElementType type : {ElementType::F32, ElementType::BF16}) {
    const bool is_f32 = type == ElementType::F32;
    const DeviceMatrix m{is_f32 ? static_cast<const void*>(f32.data()) : bf.data(), vocab, hidden, ld, type};
    DeviceBuffer<float> x(ids.size() * hidden);
    embedding_lookup(m, dids.data(), static_cast<int64_t>(ids.size()), x.data(), nullptr);
    const std::vector<float> got = x.download();
    for (size_t r = 0; r < ids.size(); ++r)
      for (int64_t c = 0; c < hidden; ++c) {
        const float v = got[r * hidden + c];
        if (ids[r] < 0 || ids[r] >= vocab)
          ASSERT_TRUE(std::isnan(v));
        else
          ASSERT_EQ(v, (is_f32 ? table : rounded)[ids[r] * ld + c]);
      }
  }
}

TEST_F(CudaSmallOps, RmsnormMatchesCpu) {
  uint64_t seed = 60;
  for (int64_t dim : {1, 5, 777, 4096, 8193}) {
    for (int64_t n : {1, 3}) {
      const std::vector<float> x = fsvd::testing::random_normal(n * dim, ++seed, 3.0f);
      std::vector<float> w = fsvd::testing::random_normal(dim, ++seed, 0.1f);
      for (float& g : w) g += 1.0f;
      DeviceBuffer<float> dx(x.size()), dw(w.size()), out(x.size());
      dx.upload(x), dw.upload(w);
      testutil::poison(out);
      rmsnorm(dx.data(), dw.data(), n, dim, 1e-5f, out.data(), ElementType::F32, nullptr);
      std::vector<float> ref(x.size());
      cpu::rmsnorm(x.data(), w.data(), n, dim, 1e-5f, ref.data());
      EXPECT_LT(relative_error(out.download(), ref), 1e-5) << "n " << n << " dim " << dim;
      // bf16 output: the same values rounded (one rounding: at most half a bf16 step).
      DeviceBuffer<uint16_t> bf(x.size());
      rmsnorm(dx.data(), dw.data(), n, dim, 1e-5f, bf.data(), ElementType::BF16, nullptr);
      const std::vector<uint16_t> bits = bf.download();
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(bf16_to_f32(bits[i]), ref[i], std::fabs(ref[i]) * 4e-3 + 1e-6) << "n " << n << " dim " << dim;
    }
  }
}

int32_t cpu_argmax(const float* v, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best] || std::isnan(v[best])) best = static_cast<int32_t>(i);
  return best;
}

TEST_F(CudaSmallOps, ArgmaxTakesLowestIndexOfTheMaximum) {
  uint64_t seed = 70;
  DeviceBuffer<int32_t> index(1);
  for (int64_t n : {1, 2, 5, 1000, 32000, 128256, 256003}) {
    // Values on a coarse grid, so the maximum is usually tied several times.
    std::vector<float> v = fsvd::testing::random_normal(n + 3, ++seed);
    for (float& x : v) x = std::round(x * 2) / 2;
    DeviceBuffer<float> dv(v.size());
    dv.upload(v);
    for (int64_t offset : {0, 1, 3}) {  // every alignment of the first value
      FSVD_CUDA_CHECK(cudaMemset(index.data(), 0xff, sizeof(int32_t)));
      argmax(dv.data() + offset, n, index.data(), nullptr);
      EXPECT_EQ(index.download()[0], cpu_argmax(v.data() + offset, n))
          << "n " << n << " offset " << offset;
    }
  }
}

TEST_F(CudaSmallOps, ArgmaxSkipsNaNAndHandlesInfinities) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<std::vector<float>> cases = {
      {nan, 1.0f, 2.0f, nan, 2.0f}, {-inf, -inf, -inf}, {nan, -inf, nan}, {1.0f, inf, 3.0f, inf}};
  const int32_t expected[] = {2, 0, 1, 1};
  DeviceBuffer<int32_t> index(1);
  for (size_t c = 0; c < cases.size(); ++c) {
    DeviceBuffer<float> dv(cases[c].size());
    dv.upload(cases[c]);
    argmax(dv.data(), cases[c].size(), index.data(), nullptr);
    EXPECT_EQ(index.download()[0], expected[c]) << "case " << c;
  }
}

// Each call lands the token in slot pos % ring_size of host memory the device
// writes directly, and moves the position on; other slots keep their values.
TEST_F(CudaSmallOps, PublishTokenFillsTheRingSlotOfItsPositionAndAdvances) {
  constexpr int kRing = 3;
  int32_t* host = nullptr;
  FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), kRing * sizeof(int32_t), cudaHostAllocMapped));
  int32_t* ring = nullptr;
  FSVD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&ring), host, 0));
  for (int i = 0; i < kRing; ++i) host[i] = -1;
  DeviceBuffer<int32_t> token(1), pos(1);
  pos.upload(std::vector<int32_t>{7});
  for (int step = 0; step < 5; ++step) {
    const int32_t t = 100 + step;
    token.upload(std::vector<int32_t>{t});
    publish_token(token.data(), pos.data(), ring, kRing, nullptr);
    FSVD_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(host[(7 + step) % kRing], t) << "step " << step;
    EXPECT_EQ(pos.download()[0], 8 + step);
    if (step == 0) {
      EXPECT_EQ(host[(7 + 1) % kRing], -1);
    }
  }
  // A negative position (the executor never passes one) still lands inside the ring.
  pos.upload(std::vector<int32_t>{-2});
  token.upload(std::vector<int32_t>{55});
  publish_token(token.data(), pos.data(), ring, kRing, nullptr);
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(host[kRing - 2], 55);
  EXPECT_EQ(pos.download()[0], -1);
  EXPECT_THROW(publish_token(token.data(), pos.data(), ring, 1, nullptr), Error);
  EXPECT_THROW(publish_token(nullptr, pos.data(), ring, kRing, nullptr), Error);
  FSVD_CUDA_CHECK(cudaFreeHost(host));
}

TEST(CudaSmallOpsArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  EXPECT_THROW(argmax(f, 0, i, nullptr), Error);
  EXPECT_THROW(argmax(nullptr, 10, i, nullptr), Error);
  EXPECT_THROW(rmsnorm(f, f, 0, 10, 1e-5f, f, ElementType::F32, nullptr), Error);
  EXPECT_THROW(embedding_lookup({nullptr, 10, 10, 10}, i, 1, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 10, 10, 10}, i, 0, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 0, 10, 10}, i, 1, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 10, 10, 9}, i, 1, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 10, 10, 10}, i, 1, nullptr, nullptr), Error);
  EXPECT_THROW(embedding_lookup({reinterpret_cast<char*>(f) + 2, 10, 10, 10, ElementType::F32}, i, 1, f,
                                nullptr),
               Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
