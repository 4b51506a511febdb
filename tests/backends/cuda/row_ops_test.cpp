// The row-batched element-wise ops against plain CPU loops, on odd shapes and
// row strides wider than the rows.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/row_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/dtype.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

class CudaRowOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

struct Shape {
  int64_t rows, cols, ld;
};
const Shape kShapes[] = {{1, 1, 1}, {1, 4097, 4097}, {3, 77, 80}, {37, 333, 401}};

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& v) {
  DeviceBuffer<T> d(v.size());
  d.upload(v);
  return d;
}

TEST_F(CudaRowOps, AddBiasTouchesOnlyTheRows) {
  for (const Shape& s : kShapes) {
    std::vector<float> y = testing::random_normal(s.rows * s.ld, 1), b = testing::random_normal(s.cols, 2);
    auto dy = to_device(y);
    auto db = to_device(b);
    add_bias(dy.data(), s.ld, db.data(), s.rows, s.cols, nullptr);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) y[r * s.ld + c] += b[c];
    EXPECT_EQ(dy.download(), y) << s.rows << "x" << s.cols;
  }
}

TEST_F(CudaRowOps, SiluMulMatchesCpuInEveryInputAndOutputType) {
  for (const Shape& s : kShapes) {
    const std::vector<float> g = testing::random_normal(s.rows * s.ld, 3, 3.0f),
                             u = testing::random_normal(s.rows * s.ld, 4);
    std::vector<float> want(s.rows * s.cols);
    for (int64_t r = 0; r < s.rows; ++r) cpu::silu_mul(&g[r * s.ld], &u[r * s.ld], s.cols, &want[r * s.cols]);
    auto dg = to_device(g);
    auto du = to_device(u);
    DeviceBuffer<float> f32(want.size());
    silu_mul(dg.data(), s.ld, du.data(), s.ld, ElementType::F32, s.rows, s.cols, f32.data(), ElementType::F32,
             nullptr);
    EXPECT_LT(testutil::relative_error(f32.download(), want), 1e-6);
    DeviceBuffer<uint16_t> bf(want.size());
    silu_mul(dg.data(), s.ld, du.data(), s.ld, ElementType::F32, s.rows, s.cols, bf.data(), ElementType::BF16,
             nullptr);
    const std::vector<uint16_t> bits = bf.download();
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(bf16_to_f32(bits[i]), want[i], std::fabs(want[i]) * 1e-2 + 1e-6) << i;

    // bf16 inputs: the CPU twin on the same rounded values.
    std::vector<float> gb = g, ub = u;
    auto dgb = to_device(testutil::round_to_bf16(gb));
    auto dub = to_device(testutil::round_to_bf16(ub));
    for (int64_t r = 0; r < s.rows; ++r) cpu::silu_mul(&gb[r * s.ld], &ub[r * s.ld], s.cols, &want[r * s.cols]);
    silu_mul(dgb.data(), s.ld, dub.data(), s.ld, ElementType::BF16, s.rows, s.cols, f32.data(), ElementType::F32,
             nullptr);
    EXPECT_LT(testutil::relative_error(f32.download(), want), 1e-6);
  }
}

TEST_F(CudaRowOps, ToBf16RoundsToNearestEven) {
  for (const Shape& s : kShapes) {
    const std::vector<float> x = testing::random_normal(s.rows * s.ld, 5);
    auto dx = to_device(x);
    DeviceBuffer<uint16_t> y(s.rows * s.cols);
    to_bf16(dx.data(), s.ld, s.rows, s.cols, testutil::as_bf16(y), s.cols, nullptr);
    const std::vector<uint16_t> got = y.download();
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) ASSERT_EQ(got[r * s.cols + c], f32_to_bf16(x[r * s.ld + c]));
  }
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
