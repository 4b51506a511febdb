// The fp8 e4m3 conversions (the fp8 KV cache's element, rounded the same on
// the CPU as CUDA's __NV_SATFINITE conversion on the GPU).
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fsvd {
namespace {

TEST(E4m3, EveryCodeRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const float v = e4m3_to_f32(static_cast<uint8_t>(b));
    if ((b & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << b;
      continue;
    }
    EXPECT_EQ(f32_to_e4m3(v), b) << "code " << b << " = " << v;
  }
}

TEST(E4m3, KnownValues) {
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);  // the largest
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_f32(0xb8), -1.0f);
}

TEST(E4m3, MidpointsRoundToEven) {
  // Between every pair of neighbouring positive codes, the midpoint goes to
  // the even code, and a hair either side to the nearer one.
  for (int b = 0; b < 0x7e; ++b) {
    const float lo = e4m3_to_f32(static_cast<uint8_t>(b)), hi = e4m3_to_f32(static_cast<uint8_t>(b + 1));
    const float mid = 0.5f * (lo + hi);
    EXPECT_EQ(f32_to_e4m3(mid), b % 2 == 0 ? b : b + 1) << "between codes " << b << " and " << b + 1;
    EXPECT_EQ(f32_to_e4m3(std::nextafter(mid, 0.0f)), b) << b;
    EXPECT_EQ(f32_to_e4m3(std::nextafter(mid, 1000.0f)), b + 1) << b;
    EXPECT_EQ(f32_to_e4m3(-mid), 0x80 | (b % 2 == 0 ? b : b + 1)) << b;
  }
}

TEST(E4m3, SaturatesAndKeepsNan) {
  EXPECT_EQ(f32_to_e4m3(449.0f), 0x7e);
  EXPECT_EQ(f32_to_e4m3(1e30f), 0x7e);
  EXPECT_EQ(f32_to_e4m3(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(f32_to_e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(f32_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(f32_to_e4m3(1e-30f), 0x00);
  EXPECT_EQ(f32_to_e4m3(-0.0f), 0x80);
}

}  // namespace
}  // namespace fsvd
