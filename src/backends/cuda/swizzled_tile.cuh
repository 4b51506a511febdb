#pragma once
// Shared-memory tiles of bf16 rows whose 16-byte chunks are swizzled by row:
// chunk c of row r sits at chunk c ^ (r % 8), so the 8 rows an ldmatrix reads
// fall in 8 different bank groups; rows of 64 values are also the 128-byte
// swizzle wgmma reads (wgmma.cuh). The attention kernels' Q, K and V tiles.
#include <cstdint>

#include "backends/cuda/cp_async.cuh"

namespace fsvd::cuda {

// Byte offset of 16-byte chunk `chunk` of row `row`, rows of kRowValues bf16.
template <int kRowValues>
__device__ __forceinline__ uint32_t tile_offset(int row, int chunk) {
  return static_cast<uint32_t>((row * (kRowValues / 8) + (chunk ^ (row & 7))) * 16);
}

// kRows rows of kRowValues bf16 into a swizzled tile by the CTA's kThreads
// threads, row r from row_at(r); rows at or past `valid` (>= 1) become zeros:
// they read nothing (src-size 0) but still name a row that exists. A pass of
// the CTA covers a multiple of 8 rows, so each thread keeps one column chunk
// and swizzle.
template <int kRowValues, int kRows, int kThreads, typename RowAt>
__device__ __forceinline__ void load_tile(uint32_t tile, RowAt row_at, int valid) {
  constexpr int kChunks = kRowValues / 8;
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(kRowsPerPass % 8 == 0 && kRows % kRowsPerPass == 0, "whole swizzle groups a pass");
  const int row = static_cast<int>(threadIdx.x) / kChunks, chunk = threadIdx.x % kChunks;
  const uint32_t dst = tile + tile_offset<kRowValues>(row, chunk);
#pragma unroll
  for (int it = 0; it < kRows / kRowsPerPass; ++it) {
    const int r = row + it * kRowsPerPass;
    cp_async16(dst + it * kRowsPerPass * kRowValues * 2, row_at(min(r, valid - 1)) + chunk * 8, r < valid ? 16 : 0);
  }
}

}  // namespace fsvd::cuda
