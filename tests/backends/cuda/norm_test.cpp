// rmsnorm against cpu::rmsnorm on odd sizes, fp32 and bf16 outputs, with
// poisoned outputs.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::relative_error;

class CudaNorm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaNorm, RmsnormMatchesCpu) {
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

TEST(CudaNormArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  EXPECT_THROW(rmsnorm(f, f, 0, 10, 1e-5f, f, ElementType::F32, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
