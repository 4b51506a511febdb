// packed_attention on wgmma (see flash_attention_sm90.h). A CTA is (query
// head, tile of 128 queries of one sequence): two warpgroups of 64 query
// rows share each K and V tile, which stream through a ring of three
// shared-memory stages (cp.async, two in flight while one is used). Both
// products take A from registers and only B from shared memory: S = Q K_j^T
// with Q's A fragments read by ldmatrix (K's rows are B's N index, K-major)
// and O += P V_j with P the rounded probabilities, re-packed from S's
// accumulators as A fragments (V's rows are B's K index: the transposed B
// layout). The tiles' 128-byte rows are swizzled by row % 8: the layout
// wgmma's 128-byte swizzle reads, and the mma.sync kernel's. The online
// softmax is flash_attention.cu's, in the log2 domain.
#include "backends/cuda/flash_attention_sm90.h"

#include <cmath>

#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/swizzled_tile.cuh"
#include "backends/cuda/wgmma.cuh"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr int kHeadDim = 64, kChunks = kHeadDim / 8, kRowBytes = kHeadDim * 2;
constexpr int kBlockM = 128, kBlockN = 64;  // queries a CTA, keys a tile
constexpr int kThreads = 256;               // two warpgroups
constexpr int kStages = 3;
constexpr int kQBytes = kBlockM * kRowBytes, kKvBytes = kBlockN * kRowBytes;
constexpr int kSmem = kQBytes + kStages * 2 * kKvBytes + 1024;  // + the slack to align the tiles to 1024
constexpr int kMaxGridY = 65535;

struct Params {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* out;
  const int32_t* seq_offsets;  // sequence blockIdx.z is rows [seq_offsets[z], seq_offsets[z + 1])
  int group, q_ld, kv_ld, out_ld;
  float scale_log2;
};

__global__ void __launch_bounds__(kThreads, 2) packed_attention_sm90_kernel(const Params p) {
  extern __shared__ unsigned char smem[];
  const uint32_t sQ = (shared_address(smem) + 1023) & ~1023u;
  auto sK = [&](int j) { return sQ + kQBytes + (j % kStages) * 2 * kKvBytes; };
  auto sV = [&](int j) { return sK(j) + kKvBytes; };

  const int head = blockIdx.x, kv_head = head / p.group;
  const int m0 = blockIdx.y * kBlockM;
  const int64_t row_base = p.seq_offsets[blockIdx.z];
  const int n = p.seq_offsets[blockIdx.z + 1] - static_cast<int>(row_base);
  if (m0 >= n) return;  // a tile past this sequence's end (the grid covers the longest)
  const int n_tiles = (n + kBlockN - 1) / kBlockN;

  const __nv_bfloat16* qg = p.q + (row_base + m0) * p.q_ld + head * kHeadDim;
  const __nv_bfloat16* kg = p.k + row_base * p.kv_ld + kv_head * kHeadDim;
  const __nv_bfloat16* vg = p.v + row_base * p.kv_ld + kv_head * kHeadDim;
  const int q_ld = p.q_ld, kv_ld = p.kv_ld;
  auto load_kv = [&](int j) {
    const int k0 = j * kBlockN;
    load_tile<kHeadDim, kBlockN, kThreads>(sK(j), [=](int r) { return kg + int64_t{k0 + r} * kv_ld; }, n - k0);
    load_tile<kHeadDim, kBlockN, kThreads>(sV(j), [=](int r) { return vg + int64_t{k0 + r} * kv_ld; }, n - k0);
  };
  // Q joins tile 0's group. Every stage a group (empty past the end), so
  // "all but the newest kStages - 2" is always the tile about to be used.
  load_tile<kHeadDim, kBlockM, kThreads>(sQ, [=](int r) { return qg + int64_t{r} * q_ld; }, n - m0);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_tiles) load_kv(s);
    cp_async_commit();
  }

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;  // warp w: query rows [16w, 16w + 16)
  float o[32] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};  // running max (raw scores), this lane's partial sums
  for (int j = 0; j < n_tiles; ++j) {
    cp_async_wait_pending<kStages - 2>();
    fence_async_shared();
    __syncthreads();  // tile j (and Q) landed; both warpgroups are done with tile j - 1's stage
    if (j + kStages - 1 < n_tiles) load_kv(j + kStages - 1);
    cp_async_commit();
    // Q's fragments are read from shared memory again for every tile: held
    // in registers across iterations, ptxas (CUDA 13) gave their registers
    // to P's fragments as well (bench/results/2026-12-03-session27).
    uint32_t q_frag[kHeadDim / 16][4];
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk)
      ldmatrix_x4(q_frag[kk], sQ + tile_offset<kHeadDim>(warp * 16 + (lane & 15), 2 * kk + (lane >> 4)));

    float s[32] = {};
    wgmma_pin(s);
    wgmma_pin(q_frag);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk)
      wgmma_m64n64k16<0>(s, q_frag[kk], wgmma_desc_sw128(sK(j) + kk * 32), kk > 0);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_pin(s);

    const int k0 = j * kBlockN;
    if (k0 + kBlockN > n) {  // keys past the sequence's end
#pragma unroll
      for (int e = 0; e < 32; ++e)
        if (k0 + (e / 4) * 8 + 2 * (lane & 3) + (e & 1) >= n) s[e] = -INFINITY;
    }
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {  // rows lane / 4 and lane / 4 + 8 of the warp
      float mx = m[hr];
#pragma unroll
      for (int t = 0; t < 8; ++t) mx = fmaxf(mx, fmaxf(s[4 * t + 2 * hr], s[4 * t + 2 * hr + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 lanes of a row
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float corr = fast_exp2((m[hr] - mx) * p.scale_log2);  // 0 on the first tile
      const float mx_scaled = mx * p.scale_log2;
      m[hr] = mx;
      float sum = 0;
#pragma unroll
      for (int t = 0; t < 8; ++t)
#pragma unroll
        for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
          s[4 * t + e] = fast_exp2(fmaf(s[4 * t + e], p.scale_log2, -mx_scaled));
          sum += s[4 * t + e];
        }
      l[hr] = fmaf(l[hr], corr, sum);
#pragma unroll
      for (int t = 0; t < 8; ++t) o[4 * t + 2 * hr] *= corr, o[4 * t + 2 * hr + 1] *= corr;
    }
    // The score accumulators of n8 tiles 2kk, 2kk + 1 are the A fragment of keys [16kk, 16kk + 16).
    uint32_t p_frag[kBlockN / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      p_frag[kk][0] = pack_bf16(s[8 * kk], s[8 * kk + 1]);
      p_frag[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
      p_frag[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
      p_frag[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
    }
    wgmma_pin(o);
    wgmma_pin(p_frag);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
      wgmma_m64n64k16<1>(o, p_frag[kk], wgmma_desc_sw128(sV(j) + kk * 16 * kRowBytes), true);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_pin(o);
  }

  // Normalize, stage the warp's rows as bf16 in its own rows of the Q tile
  // (only this warp read them), then store 16-byte chunks of whole rows.
  unsigned char* q_tile = smem + (sQ - shared_address(smem));
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float sum = l[hr];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = 1.0f / sum;
    const int row = warp * 16 + (lane >> 2) + 8 * hr;
#pragma unroll
    for (int t = 0; t < 8; ++t)
      *reinterpret_cast<uint32_t*>(q_tile + tile_offset<kHeadDim>(row, t) + 4 * (lane & 3)) =
          pack_bf16(o[4 * t + 2 * hr] * inv, o[4 * t + 2 * hr + 1] * inv);
  }
  __syncwarp();
#pragma unroll
  for (int it = 0; it < 16 * kChunks / 32; ++it) {
    const int c = it * 32 + lane;
    const int row = warp * 16 + c / kChunks, chunk = c % kChunks;
    if (m0 + row >= n) continue;
    const uint4 val = *reinterpret_cast<const uint4*>(q_tile + tile_offset<kHeadDim>(row, chunk));
    *reinterpret_cast<uint4*>(p.out + (row_base + m0 + row) * p.out_ld + head * kHeadDim + chunk * 8) = val;
  }
}

}  // namespace

bool packed_attention_sm90_supports(int head_dim) { return head_dim == kHeadDim && runs_wgmma(); }

void packed_attention_sm90(const PackedRows& q, const PackedRows& k, const PackedRows& v, const int32_t* seq_offsets,
                           int seqs, int max_len, int n_heads, int group, const PackedRowsOut& out, float scale_log2,
                           cudaStream_t stream) {
  const int m_tiles = (max_len + kBlockM - 1) / kBlockM;
  check(m_tiles <= kMaxGridY && seqs <= kMaxGridY, "packed_attention", "max_len ", max_len, " x ", seqs,
        " sequences is too large for one launch");
  Params p{q.data, k.data, v.data, out.data, seq_offsets, group, static_cast<int>(q.ld), static_cast<int>(k.ld),
           static_cast<int>(out.ld), scale_log2};
  FSVD_CUDA_CHECK(cudaFuncSetAttribute(packed_attention_sm90_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       kSmem));
  packed_attention_sm90_kernel<<<dim3(n_heads, m_tiles, seqs), kThreads, kSmem, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("packed_attention_sm90_kernel");
}

}  // namespace fsvd::cuda
