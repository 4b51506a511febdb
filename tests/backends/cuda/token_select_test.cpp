// argmax against a plain CPU version on odd sizes and alignments, NaN and
// infinities; publish_token into mapped host memory.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/token_select.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

class CudaTokenSelect : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

int32_t cpu_argmax(const float* v, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best] || std::isnan(v[best])) best = static_cast<int32_t>(i);
  return best;
}

TEST_F(CudaTokenSelect, ArgmaxTakesLowestIndexOfTheMaximum) {
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

TEST_F(CudaTokenSelect, ArgmaxSkipsNaNAndHandlesInfinities) {
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
TEST_F(CudaTokenSelect, PublishTokenFillsTheRingSlotOfItsPositionAndAdvances) {
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

TEST(CudaTokenSelectArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  EXPECT_THROW(argmax(f, 0, i, nullptr), Error);
  EXPECT_THROW(argmax(nullptr, 10, i, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
