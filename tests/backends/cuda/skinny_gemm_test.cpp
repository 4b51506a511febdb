// What the op table (backends/op_table/gemm_cases.cpp runs skinny_gemm
// through Gemm::run) does not check: which products skinny_gemm takes, and
// that it refuses the others with a clear error before touching the device
// (host only).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/skinny_gemm.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "testing/fails_with.h"

namespace fsvd::cuda {
namespace {

// A product the kernel takes: bf16 W [40, 64] (ld 64) and X at 16-byte
// aligned (fake, never dereferenced) addresses.
SkinnyGemm supported() {
  SkinnyGemm g;
  g.w = {reinterpret_cast<const void*>(uintptr_t{4096}), 40, 64, 64, ElementType::BF16};
  g.x = reinterpret_cast<const void*>(uintptr_t{8192});
  g.ldx = 64;
  g.y = reinterpret_cast<void*>(uintptr_t{16384});
  g.ldy = 40;
  return g;
}

TEST(CudaSkinnyGemm, TakesBf16ProductsOfUpTo8AlignedRowsAndSmallFirstFactorsUpTo32) {
  const SkinnyGemm g = supported();  // K = 64 >= N = 40: a first factor's shape
  EXPECT_TRUE(skinny_gemm_supports(g, 1));
  EXPECT_TRUE(skinny_gemm_supports(g, kSkinnyAnyRows + 1));
  EXPECT_TRUE(skinny_gemm_supports(g, kSkinnyMaxRows));
  EXPECT_FALSE(skinny_gemm_supports(g, 0));
  EXPECT_FALSE(skinny_gemm_supports(g, kSkinnyMaxRows + 1));
  SkinnyGemm wide = g;  // K < N: a second factor's shape
  wide.w.rows = 72;
  wide.ldy = 72;
  EXPECT_TRUE(skinny_gemm_supports(wide, kSkinnyAnyRows));
  EXPECT_FALSE(skinny_gemm_supports(wide, kSkinnyAnyRows + 1));
  SkinnyGemm big = g;  // a first factor's shape, as large as a dense 4096 x 4096
  big.w.rows = 4096;
  big.w.cols = big.w.ld = big.ldx = kSkinnyMaxWeights / 4096;
  big.ldy = 4096;
  EXPECT_TRUE(skinny_gemm_supports(big, kSkinnyAnyRows));
  EXPECT_FALSE(skinny_gemm_supports(big, kSkinnyAnyRows + 1));
  SkinnyGemm f32 = g;
  f32.w.type = ElementType::F32;
  EXPECT_FALSE(skinny_gemm_supports(f32, 4));
  SkinnyGemm odd_ld = g;
  odd_ld.ldx = 68 + 1;
  EXPECT_FALSE(skinny_gemm_supports(odd_ld, 4));
  SkinnyGemm misaligned = g;
  misaligned.x = reinterpret_cast<const void*>(uintptr_t{8192 + 8});
  EXPECT_FALSE(skinny_gemm_supports(misaligned, 4));
  SkinnyGemm odd_step = g;
  odd_step.x_step = 12;
  EXPECT_FALSE(skinny_gemm_supports(odd_step, 4));
}

TEST(CudaSkinnyGemm, RefusesWhatItDoesNotTake) {
  SkinnyGemm g = supported();
  EXPECT_TRUE(test::fails_with([&] { skinny_gemm(g, kSkinnyMaxRows + 1, nullptr); }, "unsupported product"));
  g.ldy = 39;  // shorter than a row of Y
  EXPECT_TRUE(test::fails_with([&] { skinny_gemm(g, 4, nullptr); }, "bad operands"));
  g = supported();
  g.y = nullptr;
  EXPECT_TRUE(test::fails_with([&] { skinny_gemm(g, 4, nullptr); }, "bad operands"));
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
