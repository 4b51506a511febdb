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

TEST(CudaSkinnyGemm, FoldsRmsNormIntoOneProductOfUpTo8Rows) {
  SkinnyGemm reads = supported();
  reads.fold.sums_in = reinterpret_cast<const float*>(uintptr_t{32768});
  EXPECT_TRUE(skinny_gemm_supports(reads, kSkinnyAnyRows));
  EXPECT_FALSE(skinny_gemm_supports(reads, kSkinnyAnyRows + 1));  // a first factor's shape, but folded
  SkinnyGemm wide = reads;  // rows wider than the sums a thread holds
  wide.w.cols = wide.w.ld = wide.ldx = kMaxNormWidth + 8;
  EXPECT_FALSE(skinny_gemm_supports(wide, 4));
  SkinnyGemm batched = reads;
  batched.batch = 2;
  EXPECT_FALSE(skinny_gemm_supports(batched, 4));

  SkinnyGemm writes = supported();
  writes.fold.gained = reinterpret_cast<__nv_bfloat16*>(uintptr_t{65536});
  writes.fold.gained_ld = 40;
  writes.fold.gain = reinterpret_cast<const float*>(uintptr_t{32768});
  writes.fold.sums_out = reinterpret_cast<float*>(uintptr_t{98304});
  EXPECT_FALSE(skinny_gemm_supports(writes, 4));  // the gained copy is of a residual added to
  writes.accumulate = true;
  EXPECT_TRUE(skinny_gemm_supports(writes, 4));
  EXPECT_FALSE(skinny_gemm_supports(writes, kSkinnyAnyRows + 1));
  SkinnyGemm no_sums = writes;
  no_sums.fold.sums_out = nullptr;
  EXPECT_FALSE(skinny_gemm_supports(no_sums, 4));
  SkinnyGemm bf16_y = writes;
  bf16_y.y_type = ElementType::BF16;
  EXPECT_FALSE(skinny_gemm_supports(bf16_y, 4));
  EXPECT_TRUE(test::fails_with([&] { skinny_gemm(bf16_y, 4, nullptr); }, "folded RMSNorm"));
}

TEST(CudaSkinnyGemm, FoldsSiluUpIntoOneProductOfUpTo8AlignedRows) {
  SkinnyGemm silu = supported();
  silu.fold.silu_up = reinterpret_cast<const __nv_bfloat16*>(uintptr_t{32768});
  EXPECT_TRUE(skinny_gemm_supports(silu, kSkinnyAnyRows));
  EXPECT_FALSE(skinny_gemm_supports(silu, kSkinnyAnyRows + 1));  // a first factor's shape, but folded
  SkinnyGemm misaligned = silu;
  misaligned.fold.silu_up = reinterpret_cast<const __nv_bfloat16*>(uintptr_t{32768 + 2});
  EXPECT_FALSE(skinny_gemm_supports(misaligned, 4));
  EXPECT_TRUE(test::fails_with([&] { skinny_gemm(misaligned, 4, nullptr); }, "16-byte aligned up rows"));
  SkinnyGemm batched = silu;
  batched.batch = 2;
  EXPECT_FALSE(skinny_gemm_supports(batched, 4));
  SkinnyGemm with_norm = silu;  // X is either the gained rows or the gate rows
  with_norm.fold.sums_in = reinterpret_cast<const float*>(uintptr_t{65536});
  EXPECT_FALSE(skinny_gemm_supports(with_norm, 4));
  SkinnyGemm writes_norm = silu;  // a dense down: SiLU·up in, the next norm's input out
  writes_norm.accumulate = true;
  writes_norm.fold.gained = reinterpret_cast<__nv_bfloat16*>(uintptr_t{65536});
  writes_norm.fold.gained_ld = 40;
  writes_norm.fold.gain = reinterpret_cast<const float*>(uintptr_t{98304});
  writes_norm.fold.sums_out = reinterpret_cast<float*>(uintptr_t{131072});
  EXPECT_TRUE(skinny_gemm_supports(writes_norm, 4));
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
