#pragma once
// Hopper warpgroup tensor-core products (wgmma, sm_90a only): the four warps
// of a warpgroup issue one asynchronous m64nNk16 product together, A from
// registers (the m16n8k16 A fragment of mma.cuh, one m16 slab a warp) and B
// from shared memory through a matrix descriptor. The accumulator fragment
// is mma.cuh's, repeated over the n8 tiles: element 4j + e of warp w holds
// row 16w + lane / 4 + 8 (e / 2), column 8j + 2 (lane % 4) + e % 2.
// C++17 (included by .cu files). On other targets these trap: the callers
// launch wgmma kernels on sm_90 devices only.
#include <cstdint>

namespace fsvd::cuda {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FSVD_WGMMA 1
#else
#define FSVD_WGMMA 0
#endif

// Descriptor of a B tile in the 128-byte swizzle layout: rows of 128 bytes
// (64 bf16), 16-byte chunk c of row r stored at chunk c ^ (r % 8), 8-row
// groups 1024 bytes apart, the tile 1024-byte aligned (the hardware XORs
// address bits 4-6 with bits 7-9). A row holds 64 K values of one N index
// (transpose 0; the next k16 step starts 32 bytes on) or 64 N values of one
// K index (transpose 1; the next k16 step starts 16 rows on). Both offset
// fields are 1024 bytes: whichever steps between 8-row groups is used, the
// other (a next 128-byte column block) is never reached at N = 64.
__device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t smem_addr) {
  constexpr uint64_t kGroup = 1024 >> 4;
  return uint64_t{(smem_addr & 0x3FFFFu) >> 4} | kGroup << 16 | kGroup << 32 | uint64_t{1} << 62;
}

// Orders this thread's register writes (accumulators, A fragments) before the
// warpgroup's next wgmma reads them.
__device__ __forceinline__ void wgmma_fence() {
#if FSVD_WGMMA
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if FSVD_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
// Waits until at most kPending committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if FSVD_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
#endif
}
// Shared-memory writes of the generic proxy (st.shared, cp.async) made
// visible to wgmma's reads (the async proxy): after they land, before the
// barrier that hands the tile over.
__device__ __forceinline__ void fence_async_shared() {
#if FSVD_WGMMA
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// Pins registers at this point of the program: reads after a wgmma_wait
// stay after it, writes before a wgmma_fence stay before it.
template <int kN>
__device__ __forceinline__ void wgmma_pin(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int kN>
__device__ __forceinline__ void wgmma_pin(uint32_t (&a)[kN][4]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]), "+r"(a[i][3])::"memory");
}

// d (+)= a · B, m64n64k16, bf16 in, fp32 accumulate; `accumulate` false
// overwrites d. kTransB: B's layout in the descriptor (wgmma_desc_sw128).
template <int kTransB>
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc,
                                                bool accumulate) {
#if FSVD_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(static_cast<int>(accumulate)), "n"(kTransB)
      : "memory");
#else
  __trap();
#endif
}

}  // namespace fsvd::cuda
