// embedding_lookup, rmsnorm and argmax against plain CPU versions (cpu::rmsnorm
// for the norm) on odd sizes, with poisoned outputs.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/small_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
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

TEST_F(CudaSmallOps, EmbeddingLookupCopiesTheRowOfTheDeviceToken) {
  for (int64_t hidden : {1, 777, 4096}) {
    const int64_t vocab = 1001;
    std::vector<float> table = fsvd::testing::random_normal(vocab * hidden, 40 + hidden);
    DeviceBuffer<uint16_t> dtable(table.size());
    dtable.upload(testutil::round_to_bf16(table));
    DeviceBuffer<int32_t> token(1);
    DeviceBuffer<float> x(hidden);
    for (int32_t t : {0, 500, 1000, -1, 1001}) {
      token.upload(std::vector<int32_t>{t});
      testutil::poison(x);
      embedding_lookup(testutil::as_bf16(dtable), vocab, hidden, token.data(), x.data(), nullptr);
      const std::vector<float> got = x.download();
      for (int64_t i = 0; i < hidden; ++i) {
        if (t < 0 || t >= vocab)
          ASSERT_TRUE(std::isnan(got[i])) << "token " << t << " index " << i;
        else
          ASSERT_EQ(got[i], table[t * hidden + i]) << "token " << t << " index " << i;
      }
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
      rmsnorm(dx.data(), dw.data(), n, dim, 1e-5f, out.data(), nullptr);
      std::vector<float> ref(x.size());
      cpu::rmsnorm(x.data(), w.data(), n, dim, 1e-5f, ref.data());
      EXPECT_LT(relative_error(out.download(), ref), 1e-5) << "n " << n << " dim " << dim;
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

TEST(CudaSmallOpsArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  EXPECT_THROW(argmax(f, 0, i, nullptr), Error);
  EXPECT_THROW(argmax(nullptr, 10, i, nullptr), Error);
  EXPECT_THROW(rmsnorm(f, f, 0, 10, 1e-5f, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup(nullptr, 10, 10, i, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup(reinterpret_cast<const __nv_bfloat16*>(f), 0, 10, i, f, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
