// Skinny GEMM (see skinny_gemm.h): Y = X · Wᵀ for n <= 32 rows of X.
//
// Work layout. A CTA of 4 warps owns a tile of W's rows (Tiling: one or two
// m16 tiles of mma.m16n8k16 a warp, W as the A operand) and a slice of K; the
// n rows of X are the B operand, padded to kTiles n8 tiles (zero rows, never
// stored). The CTA streams its W tile and the matching columns of X through a
// ring of kStages shared-memory stages (cp.async, XOR-swizzled 16-byte chunks
// so ldmatrix reads 8 rows from distinct banks), kStages - 1 stages in flight
// while one is multiplied: a product of a few MB reaches the weight bandwidth
// only with tens of KB in flight per SM from its first microsecond.
//
// W is read once a step: its copies are marked first to leave L2, so they do
// not push out X, the partial sums or the next kernel's inputs (measured in
// bench/results/2026-12-03-session25; asking L2 to prefetch the next
// product's weights instead was slower there).
//
// Programmatic dependent launch. W never depends on the previous kernel, so
// its first kStages - 1 stages are requested before the CTA waits for the
// previous kernel; X (the previous kernel's output) is requested after.
// Before waiting, the CTA lets the next kernel launch: its CTAs take SMs as
// this one's retire and start their own weight stream.
//
// Split-K. When the row tiles alone would not fill two CTAs per SM, K is cut
// into slices (as many as still fit one wave) whose CTAs form a cluster:
// each leaves its partial sums in shared memory, and after a cluster barrier
// each sums a share of the outputs over all slices in slice order through
// distributed shared memory.
// The order of every sum depends only on W's shape and the tiling (one for
// up to 16 rows, one for 17-32), so a row's result does not depend on the
// other rows of its tiling class.
//
// RMSNorm folded in (up to 8 rows, Fold). A norm's input rows x are the
// residual the previous product added to: that product also writes bf16(x ·
// gain) as it stores x, and each row tile's sums of squares of the x values
// it stored (its 64 columns; reduced in registers and shared memory, a fixed
// order). The next product multiplies the gained rows as X and scales each
// output row by 1 / rms(x row): it requests the tiles' sums with X (a few a
// thread, held in registers) and adds them up after its main loop. So
// neither the weight stream, the staging nor the main loop's start changes
// (a version whose reader summed x's squares itself before its main loop
// was slower: bench/results/2026-12-03-session23, call M).
//
// SiLU·up folded in (Fold::silu_up, up to 8 rows). X's stage is copied
// twice, from the gate rows and from the up rows (a second tile after X's);
// once a thread's copies of a stage have landed, it forms bf16(silu(gate) ·
// up) over the chunks it copied, in place of the gate's, before the barrier
// that shows the stage to all: one launch fewer a layer than a silu_mul
// kernel between the gate and up products and this one. Every row tile
// forms its slice's values again, so the exp and division are paid tiles
// times over: from 9 rows that cost more than the launch it saves
// (bench/results/2026-12-03-session26).
//
// Which products. Up to 8 rows, all. From 9 to 32 only those with K >= N
// and fewer than kSkinnyMaxWeights weights (the first factors: at LLaMA-7B
// keep 0.5, 4.2-16.4 M): cuBLASLt splits them over K with a separate reduce
// kernel. Products with K < N, and LLaMA-7B's dense o (2^24) and down (45 M),
// ran faster on cuBLASLt than on this stream at 16 and 32 rows
// (bench/results/2026-12-03-session21-skinny, 2026-12-03-session22-fused).
#include "backends/cuda/skinny_gemm.h"

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>

#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/mma.cuh"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxSplits = 8;  // the portable cluster size
constexpr int kCtasPerSm = 2;  // what the ring's shared memory allows

// The tiling for kTiles n8 tiles of X rows. Up to 16 rows a warp owns one
// m16 tile of W and a stage is 128 columns; from 17 rows each warp owns two
// m16 tiles (so each X fragment serves twice the weights and a CTA reads X
// from L2 for twice the rows of W) and a stage is 64 columns. From 9 rows
// the ring is 4 stages of 20 KB, so two CTAs fit an SM (three up to 8 rows,
// where a stage is 18 KB; the split planner counts two).
struct Tiling {
  int m_tiles;     // m16 tiles of W a warp
  int stage_cols;  // columns of K a stage
  __host__ __device__ constexpr int tile_rows() const { return kWarps * 16 * m_tiles; }
  __host__ __device__ constexpr int chunks() const { return stage_cols / 8; }  // 16-byte chunks of a stage's row
};
__host__ __device__ constexpr Tiling tiling(int tiles) { return tiles >= 4 ? Tiling{2, 64} : Tiling{1, 128}; }
constexpr int kStages = 4;
// A stage: the W tile, X's rows, and with silu_up the up rows.
__host__ __device__ constexpr int stage_bytes(int tiles, bool silu_up) {
  return (tiling(tiles).tile_rows() + 8 * tiles * (silu_up ? 2 : 1)) * tiling(tiles).stage_cols * 2;
}

struct Params {
  const __nv_bfloat16* w;
  const __nv_bfloat16* x;
  void* y;
  int64_t ldw, ldx, ldy;
  int64_t w_step, x_step, y_step;  // product blockIdx.y's offsets, in elements
  int n_out, k, rows;  // W is [n_out, k]; X has `rows` rows
  int splits, slice_cols;  // CTAs per row tile (the cluster) and the columns of each
  Fold fold;
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled stage of
// kChunks chunks a row.
template <int kChunks>
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return static_cast<uint32_t>((row * kChunks + (chunk ^ (row & 7))) * 16);
}

// Rows [0, kRows) of a stage from the rows of a matrix with `valid` rows,
// columns [k0, k0 + 8 kChunks) of `k`: chunks past either end become zeros
// (src-size 0 reads nothing; the address stays one that exists).
// kStreamed: rows read once (W), copied with L2 eviction `policy`.
template <int kRows, int kChunks, bool kStreamed = false>
__device__ __forceinline__ void load_stage(uint32_t tile, const __nv_bfloat16* m, int64_t ld, int valid, int k0,
                                           int k, uint64_t policy = 0) {
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(kRows % kRowsPerPass == 0, "whole passes");
  const int row = static_cast<int>(threadIdx.x) / kChunks, chunk = threadIdx.x % kChunks;
  const int col = k0 + chunk * 8;
  const int col_bytes = 2 * min(max(k - col, 0), 8);
#pragma unroll
  for (int it = 0; it < kRows / kRowsPerPass; ++it) {
    const int r = row + it * kRowsPerPass;
    const bool ok = r < valid && col_bytes > 0;
    const uint32_t dst = tile + swizzled<kChunks>(r, chunk);
    if constexpr (kStreamed)
      cp_async16(dst, ok ? m + r * ld + col : m, ok ? col_bytes : 0, policy);
    else
      cp_async16(dst, ok ? m + r * ld + col : m, ok ? col_bytes : 0);
  }
}

// silu(gate) · up over the chunks of a stage's gate rows (at `gate`, the up
// rows right after) that this thread copied in load_stage<kRows, kChunks>,
// written over the gate's as bf16. Rows past `valid` are zeros, as is
// silu(0) · 0: left alone.
template <int kRows, int kChunks>
__device__ __forceinline__ void silu_up_stage(unsigned char* gate, int valid) {
  constexpr int kRowsPerPass = kThreads / kChunks;
  const int row = static_cast<int>(threadIdx.x) / kChunks, chunk = threadIdx.x % kChunks;
#pragma unroll
  for (int it = 0; it < kRows / kRowsPerPass; ++it) {
    if (row + it * kRowsPerPass >= valid) break;
    uint4* g = reinterpret_cast<uint4*>(gate + swizzled<kChunks>(row + it * kRowsPerPass, chunk));
    const uint4 gw = *g, uw = g[kRows * kChunks];
    const uint32_t gs[4] = {gw.x, gw.y, gw.z, gw.w}, us[4] = {uw.x, uw.y, uw.z, uw.w};
    uint32_t out[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      out[i] = pack_bf16(fast_silu(bf16_lo(gs[i])) * bf16_lo(us[i]), fast_silu(bf16_hi(gs[i])) * bf16_hi(us[i]));
    *g = make_uint4(out[0], out[1], out[2], out[3]);
  }
}

// kTiles: n8 tiles of X rows (n <= 8 kTiles). kBf16Out: Y is bf16, else
// fp32. kSiluUp: the input is silu(X) · p.fold.silu_up.
template <int kTiles, bool kBf16Out, bool kAccumulate, bool kSiluUp>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) skinny_gemm_kernel(const __grid_constant__ Params p) {
  constexpr Tiling kT = tiling(kTiles);
  constexpr int kMTiles = kT.m_tiles, kTileRows = kT.tile_rows(), kStageCols = kT.stage_cols;
  constexpr int kChunks = kT.chunks(), kRowBytes = kStageCols * 2;
  constexpr int kStageBytes = stage_bytes(kTiles, kSiluUp);
  constexpr int kXRows = 8 * kTiles;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t ring = shared_address(smem);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int tile = blockIdx.x / p.splits, slice = blockIdx.x % p.splits;  // slice = rank in the cluster
  const int row0 = tile * kTileRows;
  const __nv_bfloat16* w = p.w + blockIdx.y * p.w_step + row0 * p.ldw;
  const __nv_bfloat16* x = p.x + blockIdx.y * p.x_step;
  const int k_begin = slice * p.slice_cols;
  const int k_end = min(p.k, k_begin + p.slice_cols);
  const int stages = (k_end - k_begin + kStageCols - 1) / kStageCols;
  const int w_rows = p.n_out - row0;

  const uint64_t w_policy = l2_evict_first_policy();
  auto load_w = [&](int s) {
    load_stage<kTileRows, kChunks, true>(ring + (s % kStages) * kStageBytes, w, p.ldw, w_rows,
                                         k_begin + s * kStageCols, k_end, w_policy);
  };
  const int x_offset = kTileRows * kRowBytes;  // X's rows in a stage
  auto load_x = [&](int s) {
    const uint32_t at = ring + (s % kStages) * kStageBytes + x_offset;
    load_stage<kXRows, kChunks>(at, x, p.ldx, p.rows, k_begin + s * kStageCols, k_end);
    if constexpr (kSiluUp)
      load_stage<kXRows, kChunks>(at + kXRows * kRowBytes, p.fold.silu_up + blockIdx.y * p.x_step, p.ldx, p.rows,
                                  k_begin + s * kStageCols, k_end);
  };
  // Every stage a group (empty past the slice's end), so waiting for "all
  // but the newest kStages - 2" always means the stage about to be used.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < stages) load_w(s);
    cp_async_commit();
  }
  // A fold (up to 8 rows: one n8 tile, one m16 tile a warp, 64-row tiles).
  // The writer's gains of the Y columns this thread will store are weights:
  // requested before the wait. Unsplit, a thread stores columns m_of(0, 0)
  // and m_of(0, 2); split, CTA 0 of the cluster stores them all, 4 a thread.
  static_assert(tiling(1).tile_rows() == kNormSumCols, "a tile's sum covers kNormSumCols columns of x");
  constexpr int kSumRegs = kMaxNormWidth / kNormSumCols / 16;  // tiles' sums a thread of the reader holds
  const bool writes = kTiles == 1 && p.fold.gained != nullptr, reads = kTiles == 1 && p.fold.sums_in != nullptr;
  float gain_of[4] = {};
  if (writes) {
    auto gain = [&](int m) { return row0 + m < p.n_out ? p.fold.gain[row0 + m] : 0.0f; };
    if (p.splits == 1) {
      gain_of[0] = gain(warp * 16 + (lane >> 2)), gain_of[1] = gain(warp * 16 + (lane >> 2) + 8);
    } else if (slice == 0) {
#pragma unroll
      for (int j = 0; j < 4; ++j) gain_of[j] = gain(threadIdx.x % 16 * 4 + j);
    }
  }

  allow_next_kernel_to_launch();
  wait_for_previous_kernel();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < stages) load_x(s);
  cp_async_commit();

  // The reader's sums: thread (row r = t / 16, j = t % 16) requests tiles j,
  // j + 16, ... of row r with X's first stages, and adds them after the loop.
  float sums[kSumRegs] = {};
  if (reads) {
    const int r = threadIdx.x / 16, j = threadIdx.x % 16, tiles_of_x = (p.k + kNormSumCols - 1) / kNormSumCols;
#pragma unroll
    for (int i = 0; i < kSumRegs; ++i)
      if (j + 16 * i < tiles_of_x) sums[i] = p.fold.sums_in[(j + 16 * i) * 8 + r];
  }

  // ldmatrix row addresses (before the swizzle). A = W: lanes 16-31 address
  // columns 8-15. B = X rows: matrices 1 and 3 (lanes 8-15, 24-31) are
  // columns 8-15, matrices 2 and 3 the next n8 tile.
  const int a_row = warp * 16 * kMTiles + (lane & 15), a_half = lane >> 4;
  const int b_row = (lane >> 4) * 8 + (lane & 7), b_half = (lane >> 3) & 1;

  float acc[kMTiles][kTiles][4] = {};
  for (int s = 0; s < stages; ++s) {
    if (s == 0)
      cp_async_wait_pending<0>();
    else
      cp_async_wait_pending<kStages - 2>();
    if constexpr (kSiluUp) silu_up_stage<kXRows, kChunks>(smem + (s % kStages) * kStageBytes + x_offset, p.rows);
    __syncthreads();  // stage s visible to all; everyone is done with stage s - 1's slot
    if (s + kStages - 1 < stages) {
      load_w(s + kStages - 1);
      load_x(s + kStages - 1);
    }
    cp_async_commit();

    const uint32_t w_tile = ring + (s % kStages) * kStageBytes, x_tile = w_tile + x_offset;
#pragma unroll
    for (int kk = 0; kk < kChunks / 2; ++kk) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
        ldmatrix_x4(a[mt], w_tile + swizzled<kChunks>(a_row + 16 * mt, 2 * kk + a_half));
      if constexpr (kTiles == 1) {
        uint32_t b[2];
        ldmatrix_x2(b, x_tile + swizzled<kChunks>(lane & 7, 2 * kk + b_half));
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) mma_bf16(acc[mt][0], a[mt], b[0], b[1]);
      } else {
#pragma unroll
        for (int np = 0; np < kTiles / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, x_tile + swizzled<kChunks>(np * 16 + b_row, 2 * kk + b_half));
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            mma_bf16(acc[mt][2 * np], a[mt], b[0], b[1]);
            mma_bf16(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
          }
        }
      }
    }
  }

  // The reader's 1 / rms of each row (rmsnorm_kernel's formula, norm.cu).
  __shared__ float inv_rms[8];
  if (reads) {
    double ss = 0;
#pragma unroll
    for (int i = 0; i < kSumRegs; ++i) ss += sums[i];
#pragma unroll
    for (int offset = 8; offset > 0; offset /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, offset);
    if (threadIdx.x % 16 == 0)
      inv_rms[threadIdx.x / 16] = 1.0f / sqrtf(static_cast<float>(ss / static_cast<double>(p.k)) + p.fold.eps);
    __syncthreads();
  }
  // Output element (X row r, W row m of the tile) into Y; returns the value
  // stored (0 for none), which a writer also stores gained with `gain`.
  auto store = [&](int r, int m, float v, float gain) {
    if (r >= p.rows || row0 + m >= p.n_out) return 0.0f;
    const int64_t at = blockIdx.y * p.y_step + r * p.ldy + row0 + m;
    if constexpr (kBf16Out) {
      __nv_bfloat16* y = static_cast<__nv_bfloat16*>(p.y) + at;
      *y = __float2bfloat16(kAccumulate ? __bfloat162float(*y) + v : v);
      return 0.0f;
    } else {
      float* y = static_cast<float*>(p.y) + at;
      const float out = kAccumulate ? *y + v : v;
      *y = out;
      if (writes) p.fold.gained[r * p.fold.gained_ld + row0 + m] = __float2bfloat16(out * gain);
      return out;
    }
  };
  // Fragment element e of m-tile mt, n-tile t: W row m_of(mt, e), X row r_of(t, e).
  auto m_of = [&](int mt, int e) { return (warp * kMTiles + mt) * 16 + (lane >> 2) + 8 * (e >> 1); };
  auto r_of = [&](int t, int e) { return t * 8 + 2 * (lane & 3) + (e & 1); };
  const int tile_sums = tile * 8;  // the writer's sums of this tile, [tile][row]
  if (p.splits == 1) {
    float sq[2] = {};  // a writer's squares of rows r_of(0, 0) and r_of(0, 1)
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float scale = reads ? inv_rms[r_of(t, e)] : 1.0f;
          const float out = store(r_of(t, e), m_of(mt, e), acc[mt][t][e] * scale, gain_of[e >> 1]);
          sq[e & 1] += out * out;
        }
    if (writes) {
      // Over the lanes of one row pair (lane % 4), then the warps.
      __shared__ float warp_sq[kWarps][8];
#pragma unroll
      for (int offset = 4; offset < 32; offset *= 2) {
        sq[0] += __shfl_xor_sync(0xffffffffu, sq[0], offset);
        sq[1] += __shfl_xor_sync(0xffffffffu, sq[1], offset);
      }
      if (lane < 4) warp_sq[warp][2 * lane] = sq[0], warp_sq[warp][2 * lane + 1] = sq[1];
      __syncthreads();
      if (threadIdx.x < 8)
        p.fold.sums_out[tile_sums + threadIdx.x] =
            warp_sq[0][threadIdx.x] + warp_sq[1][threadIdx.x] + warp_sq[2][threadIdx.x] + warp_sq[3][threadIdx.x];
    }
    return;
  }

  // Split-K: partial sums [X row][W row] in this CTA's ring (rows padded by
  // 4 floats: the fragment's stores hit 32 banks), then each CTA of the
  // cluster sums a share of the outputs, 4 at a time, over the slices, every
  // slice's value requested before any is added.
  constexpr int kLd = kTileRows + 4, kQuads = kXRows * kTileRows / 4;
  cp_async_wait_pending<0>();  // only empty groups remain, but the ring is reused
  __syncthreads();
  float* partial = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int t = 0; t < kTiles; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) partial[r_of(t, e) * kLd + m_of(mt, e)] = acc[mt][t][e];
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  float sq = 0;  // a writer's squares of its quad (one a thread of CTA 0: kQuads == kThreads at one n8 tile)
  for (int q = slice * kThreads + threadIdx.x; q < kQuads; q += p.splits * kThreads) {
    const int r = q / (kTileRows / 4), m = q % (kTileRows / 4) * 4;
    float4 v[kMaxSplits];
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s)
      if (s < p.splits) v[s] = *reinterpret_cast<const float4*>(cluster.map_shared_rank(partial, s) + r * kLd + m);
    float4 sum = v[0];
#pragma unroll
    for (int s = 1; s < kMaxSplits; ++s)
      if (s < p.splits) sum.x += v[s].x, sum.y += v[s].y, sum.z += v[s].z, sum.w += v[s].w;
    if (reads) {
      const float scale = inv_rms[r];
      sum.x *= scale, sum.y *= scale, sum.z *= scale, sum.w *= scale;
    }
    const float o0 = store(r, m, sum.x, gain_of[0]), o1 = store(r, m + 1, sum.y, gain_of[1]);
    const float o2 = store(r, m + 2, sum.z, gain_of[2]), o3 = store(r, m + 3, sum.w, gain_of[3]);
    sq += o0 * o0 + o1 * o1 + o2 * o2 + o3 * o3;
  }
  if (writes && slice == 0) {  // the 16 threads of each row (a half-warp)
#pragma unroll
    for (int offset = 8; offset > 0; offset /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, offset);
    if (threadIdx.x % 16 == 0) p.fold.sums_out[tile_sums + threadIdx.x / 16] = sq;
  }
  cluster.sync();  // the other CTAs' partial sums stay until all have read them
}

template <int kTiles, bool kBf16Out, bool kAccumulate, bool kSiluUp>
void launch(const Params& p, int tiles, int batch, cudaStream_t stream) {
  constexpr int kSmem = kStages * stage_bytes(kTiles, kSiluUp);
  const auto kernel = skinny_gemm_kernel<kTiles, kBf16Out, kAccumulate, kSiluUp>;
  FSVD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(tiles * p.splits), static_cast<unsigned>(batch), 1);
  config.blockDim = dim3(kThreads, 1, 1);
  config.dynamicSmemBytes = kSmem;
  config.stream = stream;
  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = 1;
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = static_cast<unsigned>(p.splits);
  attrs[1].val.clusterDim.y = attrs[1].val.clusterDim.z = 1;
  config.attrs = attrs;
  config.numAttrs = p.splits > 1 ? 2 : 1;
  FSVD_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, p));
}

template <int kTiles, bool kSiluUp>
void launch_for_output(const Params& p, ElementType y_type, bool accumulate, int tiles, int batch,
                       cudaStream_t stream) {
  if (y_type == ElementType::BF16)
    accumulate ? launch<kTiles, true, true, kSiluUp>(p, tiles, batch, stream)
               : launch<kTiles, true, false, kSiluUp>(p, tiles, batch, stream);
  else
    accumulate ? launch<kTiles, false, true, kSiluUp>(p, tiles, batch, stream)
               : launch<kTiles, false, false, kSiluUp>(p, tiles, batch, stream);
}

template <int kTiles>
void launch_for_input(const Params& p, ElementType y_type, bool accumulate, int tiles, int batch,
                      cudaStream_t stream) {
  if constexpr (kTiles == 1)  // up to 8 rows: SiLU·up's only tiling
    if (p.fold.silu_up) return launch_for_output<kTiles, true>(p, y_type, accumulate, tiles, batch, stream);
  launch_for_output<kTiles, false>(p, y_type, accumulate, tiles, batch, stream);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool skinny_gemm_supports(const SkinnyGemm& g, int64_t n) {
  const Fold& f = g.fold;
  const bool fold_ok =
      (!f.sums_in || (n <= kSkinnyAnyRows && g.batch == 1 && g.w.cols <= kMaxNormWidth)) &&
      (!f.gained || (n <= kSkinnyAnyRows && g.batch == 1 && g.accumulate && g.y_type == ElementType::F32 && f.gain &&
                     f.sums_out)) &&
      (!f.silu_up || (n <= kSkinnyAnyRows && g.batch == 1 && !f.sums_in && aligned16(f.silu_up)));
  return g.w.type == ElementType::BF16 && n >= 1 && fold_ok &&
         (n <= kSkinnyAnyRows ||
          (n <= kSkinnyMaxRows && g.w.cols >= g.w.rows && g.w.rows * g.w.cols < kSkinnyMaxWeights)) &&
         aligned16(g.w.data) && aligned16(g.x) && g.w.ld % 8 == 0 && g.ldx % 8 == 0 && g.x_step % 8 == 0 &&
         g.w.rows <= INT_MAX / 2 && g.w.cols <= INT_MAX / 2;
}

void skinny_gemm(const SkinnyGemm& g, int64_t n, cudaStream_t stream) {
  const char* where = "skinny_gemm";
  check(skinny_gemm_supports(g, n), where, "unsupported product: W [", g.w.rows, ", ", g.w.cols, "] ld ", g.w.ld,
        ", n ", n, ", ldx ", g.ldx, " (bf16, 1..", kSkinnyAnyRows, " rows, or up to ", kSkinnyMaxRows,
        " when K >= N and W has under ", kSkinnyMaxWeights,
        " weights; 16-byte aligned rows; a folded RMSNorm: one product of up to ", kSkinnyAnyRows,
        " rows, reading rows up to ", kMaxNormWidth, " wide, writing from an fp32 Y added to; SiLU·up: one product",
        " of up to ", kSkinnyAnyRows, " rows, 16-byte aligned up rows, no norm read)");
  check(g.w.rows >= 1 && g.w.cols >= 1 && g.w.ld >= g.w.cols && g.ldx >= g.w.cols && g.ldy >= g.w.rows &&
            g.y != nullptr && g.batch >= 1,
        where, "bad operands: W [", g.w.rows, ", ", g.w.cols, "], ldx ", g.ldx, ", ldy ", g.ldy);
  const int sms = sm_count();

  Params p{};
  p.w = static_cast<const __nv_bfloat16*>(g.w.data);
  p.x = static_cast<const __nv_bfloat16*>(g.x);
  p.y = g.y;
  p.ldw = g.w.ld;
  p.ldx = g.ldx;
  p.ldy = g.ldy;
  p.w_step = g.w.rows * g.w.ld;
  p.x_step = g.x_step;
  p.y_step = g.y_step;
  p.n_out = static_cast<int>(g.w.rows);
  p.k = static_cast<int>(g.w.cols);
  p.rows = static_cast<int>(n);
  p.fold = g.fold;
  const int n_tiles = n <= 8 ? 1 : n <= 16 ? 2 : 4;
  // The most slices (whole stages each) whose CTAs all fit at once, at
  // kCtasPerSm an SM: a second wave would double a short product's time.
  const Tiling t = tiling(n_tiles);
  const int tiles = static_cast<int>(ceil_div(g.w.rows, t.tile_rows()));
  const int stage_count = static_cast<int>(ceil_div(g.w.cols, t.stage_cols));
  int splits = 1;
  while (splits < std::min(kMaxSplits, stage_count) &&
         int64_t{tiles} * (splits + 1) * g.batch <= int64_t{kCtasPerSm} * sms)
    ++splits;
  const int slice_stages = static_cast<int>(ceil_div(stage_count, splits));
  p.splits = static_cast<int>(ceil_div(stage_count, slice_stages));
  p.slice_cols = slice_stages * t.stage_cols;
  check(int64_t{tiles} * p.splits <= INT_MAX && g.batch <= 65535, where, "too many rows for one launch");
  switch (n_tiles) {
    case 1: return launch_for_input<1>(p, g.y_type, g.accumulate, tiles, g.batch, stream);
    case 2: return launch_for_input<2>(p, g.y_type, g.accumulate, tiles, g.batch, stream);
    default: return launch_for_input<4>(p, g.y_type, g.accumulate, tiles, g.batch, stream);
  }
}

}  // namespace fsvd::cuda
