// packed_attention_sm90 (the wgmma kernel) called directly, on shapes
// packed_attention itself would give the mma.sync kernel (batches that do
// not fill a wave): sequences of odd lengths around its 64-key tiles and
// 128-query CTAs, grouped kv heads, output over q; against cpu::attention
// per sequence on the same bf16 values.
#include "backends/cuda/flash_attention_sm90.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/decode_test_util.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

// flash_attention_test.cpp's bound: bf16 probabilities and output, twice
// their expected error.
constexpr double kTolerance = 4e-3;

struct Case {
  std::vector<int> lens;
  int heads, kv_heads;
  bool in_place;
};

class CudaPackedAttentionSm90 : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
    if (!packed_attention_sm90_supports(64)) GTEST_SKIP() << "not a compute capability 9.0 device";
  }
};

TEST_P(CudaPackedAttentionSm90, MatchesCpuPerSequence) {
  const Case& c = GetParam();
  const int hd = 64, q_dim = c.heads * hd, kv_dim = c.kv_heads * hd;
  const int ld = q_dim + 2 * kv_dim + 8;  // q|k|v rows, as the encoder's staging buffer
  std::vector<int32_t> offsets{0};
  int max_len = 0;
  for (int l : c.lens) offsets.push_back(offsets.back() + l), max_len = std::max(max_len, l);
  const int rows = offsets.back();
  std::vector<float> qkv = fsvd::testing::random_normal(size_t(rows) * ld, 31);
  auto d = testutil::to_device(testutil::round_to_bf16(qkv));
  auto d_offsets = testutil::to_device(offsets);
  DeviceBuffer<uint16_t> out(size_t(rows) * q_dim);
  testutil::poison(out);
  const __nv_bfloat16* base = testutil::as_bf16(d);
  const float scale_log2 = 1.4426950408889634f / std::sqrt(float(hd));  // log2(e) / sqrt(head_dim)
  const PackedRowsOut dst =
      c.in_place ? PackedRowsOut{testutil::as_bf16(d), ld} : PackedRowsOut{testutil::as_bf16(out), q_dim};
  packed_attention_sm90({base, ld}, {base + q_dim, ld}, {base + q_dim + kv_dim, ld}, d_offsets.data(),
                        static_cast<int>(c.lens.size()), max_len, c.heads, c.heads / c.kv_heads, dst,
                        scale_log2, nullptr);
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> got;
  if (c.in_place) {
    const std::vector<float> all = testutil::to_float(d.download());
    for (int r = 0; r < rows; ++r) got.insert(got.end(), &all[size_t(r) * ld], &all[size_t(r) * ld + q_dim]);
  } else {
    got = testutil::to_float(out.download());
  }
  for (size_t s = 0; s < c.lens.size(); ++s) {
    const float* rows_s = qkv.data() + size_t(offsets[s]) * ld;
    std::vector<float> want(size_t(c.lens[s]) * q_dim);
    cpu::attention(rows_s, ld, {rows_s + q_dim, rows_s + q_dim + kv_dim, ld}, c.lens[s], 0,
                   {c.heads, c.kv_heads, hd}, want.data(), /*causal=*/false);
    const std::vector<float> got_s(got.begin() + size_t(offsets[s]) * q_dim,
                                   got.begin() + size_t(offsets[s + 1]) * q_dim);
    EXPECT_LT(testutil::relative_error(got_s, want), kTolerance) << "sequence " << s << " of " << c.lens[s];
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaPackedAttentionSm90,
                         ::testing::Values(Case{{1, 77, 300, 129, 16, 64, 65, 128}, 3, 3, false},
                                           Case{{200, 1, 129, 513}, 2, 2, true},
                                           Case{{191, 33, 256}, 4, 2, false}));

}  // namespace
}  // namespace fsvd::cuda
