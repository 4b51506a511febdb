// The row-batched element-wise ops against plain CPU loops (cpu::silu_mul for
// SiLU·up), on odd shapes and row strides wider than the rows.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/decode_test_util.h"
#include "core/dtype.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

class CudaElementwise : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

struct Shape {
  int64_t rows, cols, ld;
};
// Odd shapes take the scalar tails; {5, 1000, 1024} the 16-byte runs in every row.
const Shape kShapes[] = {{1, 1, 1}, {1, 4097, 4097}, {3, 77, 80}, {37, 333, 401}, {5, 1000, 1024}};

TEST_F(CudaElementwise, AddBiasTouchesOnlyTheRows) {
  for (const Shape& s : kShapes) {
    std::vector<float> y = testing::random_normal(s.rows * s.ld, 1), b = testing::random_normal(s.cols, 2);
    auto dy = testutil::to_device(y);
    auto db = testutil::to_device(b);
    add_bias(dy.data(), s.ld, db.data(), s.rows, s.cols, nullptr);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) y[r * s.ld + c] += b[c];
    EXPECT_EQ(dy.download(), y) << s.rows << "x" << s.cols;
  }
}

TEST_F(CudaElementwise, SiluMulMatchesCpuInEveryInputAndOutputType) {
  for (const Shape& s : kShapes) {
    const std::vector<float> g = testing::random_normal(s.rows * s.ld, 3, 3.0f),
                             u = testing::random_normal(s.rows * s.ld, 4);
    std::vector<float> want(s.rows * s.cols);
    for (int64_t r = 0; r < s.rows; ++r) cpu::silu_mul(&g[r * s.ld], &u[r * s.ld], s.cols, &want[r * s.cols]);
    auto dg = testutil::to_device(g);
    auto du = testutil::to_device(u);
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
    auto dgb = testutil::to_device(testutil::round_to_bf16(gb));
    auto dub = testutil::to_device(testutil::round_to_bf16(ub));
    for (int64_t r = 0; r < s.rows; ++r) cpu::silu_mul(&gb[r * s.ld], &ub[r * s.ld], s.cols, &want[r * s.cols]);
    silu_mul(dgb.data(), s.ld, dub.data(), s.ld, ElementType::BF16, s.rows, s.cols, f32.data(), ElementType::F32,
             nullptr);
    EXPECT_LT(testutil::relative_error(f32.download(), want), 1e-6);
  }
}

TEST_F(CudaElementwise, StageBf16RoundsToNearestEvenAndZeroesThePadding) {
  for (const Shape& s : kShapes) {
    const std::vector<float> x = testing::random_normal(s.rows * s.ld, 5);
    auto dx = testutil::to_device(x);
    // One block, or the row cut into three odd segments placed at 8-aligned offsets.
    const int64_t a = s.cols / 3, b = s.cols / 2 - a;
    const std::vector<std::vector<StageSegment>> layouts = {
        {{0, s.cols, 0}}, {{0, a, 0}, {a, b, (a + 7) / 8 * 8}, {a + b, s.cols - a - b, (a + 7) / 8 * 8 + (b + 7) / 8 * 8}}};
    for (const std::vector<StageSegment>& segs : layouts) {
      const int64_t ldy = segs.back().dst_col + (segs.back().cols + 7) / 8 * 8 + 3;
      DeviceBuffer<uint16_t> y(s.rows * ldy);
      testutil::poison(y);
      stage_bf16(dx.data(), s.ld, s.rows, segs.data(), static_cast<int>(segs.size()), testutil::as_bf16(y), ldy,
                 nullptr);
      const std::vector<uint16_t> got = y.download();
      for (int64_t r = 0; r < s.rows; ++r)
        for (const StageSegment& g : segs)
          for (int64_t c = 0; c < (g.cols + 7) / 8 * 8; ++c)
            ASSERT_EQ(got[r * ldy + g.dst_col + c], c < g.cols ? f32_to_bf16(x[r * s.ld + g.src_col + c]) : 0)
                << s.rows << "x" << s.cols << " segment at " << g.dst_col << " column " << c;
    }
  }
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
