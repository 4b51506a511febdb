// Flash attention (see flash_attention.h): FlashAttention-2 forward on mma.sync m16n8k16 (bf16 in,
// fp32 accumulate). A CTA is (query head, tile of 128 queries) with 4 warps
// of 32 query rows; each warp's two m16 tiles share every K and V fragment
// it loads, which halves shared-memory reads per flop against 16 rows a warp
// (short prompts, whose 128-query tiles would not fill one wave, take
// 64-query tiles instead). Q stays in shared memory; K and V tiles stream
// through one buffer each with cp.async: V_j's copy overlaps S = Q K_j^T,
// K_{j+1}'s overlaps the softmax and O += P V_j (two CTAs an SM hide the
// rest; an fp8 cache's tiles land in staging tiles and are widened to bf16
// after each wait, one barrier more a tile). Rows past the valid length are
// zero-filled, never read. Rows of 16-
// byte chunks are XOR-swizzled by row % 8, so both the cp.async stores and
// the ldmatrix reads of 8 rows hit distinct banks. The online softmax runs in
// registers in the log2 domain (scale folded into one FMA before ex2); only
// tiles that cross the diagonal are masked, tiles above it are never loaded,
// and warps whose rows all precede a tile skip its math. The grid runs the
// latest (heaviest) query tiles first, and the query heads of one kv head
// side by side so their K/V tiles come from L2.
#include "backends/cuda/flash_attention.h"

#include <cmath>
#include <cstdint>

#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/flash_attention_sm90.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/swizzled_tile.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
// Queries per CTA: 128 (32 rows a warp, 255 registers, two CTAs an SM), or
// 64 (16 rows a warp, three CTAs an SM) where 128-query tiles would not fill
// one wave.
constexpr int ctas_per_sm(int block_m) { return block_m == 128 ? 2 : 3; }
constexpr int kMaxGridY = 65535;

struct AttentionParams {
  const __nv_bfloat16* q;
  const void* k;  // cache rows of T (the kernel's template parameter)
  const void* v;
  __nv_bfloat16* out;
  const int32_t* blocks;  // the sequence's block table; null: position t is pool row t
  int block_shift;        // log2 of the block size
  int pos, n, group;
  int q_ld, kv_ld, out_ld;  // row strides in elements
  float scale_log2;         // log2(e) / sqrt(head_dim)
  // Packed sequences (encoder attention): sequence blockIdx.z is rows
  // [seq_offsets[z], seq_offsets[z + 1]) of q, k, v and out, at positions
  // from 0; pos, n and blocks are then unused. Null: one sequence.
  const int32_t* seq_offsets;
};

// The pool row holding position t of a sequence with block table `blocks`
// (null: the pool is the sequence's dense cache).
__device__ __forceinline__ int64_t pool_row(const int32_t* blocks, int shift, int t) {
  if (!blocks) return t;
  return (int64_t{blocks[t >> shift]} << shift) + (t & ((1 << shift) - 1));
}

// fp8 caches: kRows rows of head_dim e4m3 values into an unswizzled staging
// tile (16 values a 16-byte chunk), zeros past `valid` as load_tile; then,
// once they have landed, widened into the swizzled bf16 tile the mma loop
// reads (e4m3 -> bf16 is exact).
template <int kHeadDim, int kRows, typename RowAt>
__device__ __forceinline__ void load_staging(uint32_t staging, RowAt row_at, int valid) {
  constexpr int kChunks = kHeadDim / 16;
  constexpr int kRowsPerPass = kThreads / kChunks;
  const int row = static_cast<int>(threadIdx.x) / kChunks, chunk = threadIdx.x % kChunks;
#pragma unroll
  for (int it = 0; it < kRows / kRowsPerPass; ++it) {
    const int r = row + it * kRowsPerPass;
    cp_async16(staging + (r * kChunks + chunk) * 16, row_at(min(r, valid - 1)) + chunk * 16, r < valid ? 16 : 0);
  }
}

template <int kHeadDim, int kRows>
__device__ __forceinline__ void widen_staging(const unsigned char* staging, unsigned char* tile) {
  constexpr int kChunks = kHeadDim / 16;
  for (int i = threadIdx.x; i < kRows * kChunks; i += kThreads) {
    const int row = i / kChunks, chunk = i % kChunks;
    const uint4 w = *reinterpret_cast<const uint4*>(staging + i * 16);
    float f[16];
    unpack_e4m3x4(w.x, f), unpack_e4m3x4(w.y, f + 4), unpack_e4m3x4(w.z, f + 8), unpack_e4m3x4(w.w, f + 12);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<uint4*>(tile + tile_offset<kHeadDim>(row, 2 * chunk + h)) =
          make_uint4(pack_bf16(f[8 * h], f[8 * h + 1]), pack_bf16(f[8 * h + 2], f[8 * h + 3]),
                     pack_bf16(f[8 * h + 4], f[8 * h + 5]), pack_bf16(f[8 * h + 6], f[8 * h + 7]));
  }
}

// Address of 16-byte chunk 2 * kk + (lane's half) in the row a lane hands to
// ldmatrix. `lane_base` is the row's address with the lane's swizzled half
// chunk, (half ^ row % 8) * 16, already in bits 4-6 (rows are 128-byte
// aligned), so the chunk pair kk only flips bits 5-6 and carries whole
// 128-byte groups: one XOR and an immediate offset, no per-kk registers.
__device__ __forceinline__ uint32_t chunk_address(uint32_t lane_base, int kk) {
  return (lane_base ^ ((kk & 3) << 5)) + (kk >> 2) * 128;
}

// kCausal: a query at position t sees keys [0, t]; else every key of its
// sequence. T: the cache's element, bf16 or fp8 (through staging tiles).
template <int kHeadDim, int kBlockN, int kBlockM, bool kCausal, typename T>
__global__ void __launch_bounds__(kThreads, ctas_per_sm(kBlockM))
    attention_kernel(const AttentionParams p) {
  constexpr bool kFp8 = sizeof(T) == 1;
  constexpr int kWarpRows = kBlockM / kWarps;  // query rows per warp
  constexpr int kMTiles = kWarpRows / 16;      // m16 tiles per warp, sharing each K/V fragment
  constexpr int kChunks = kHeadDim / 8;
  constexpr int kRowBytes = kHeadDim * 2;
  constexpr int kScoreTiles = kBlockN / 8;  // n8 tiles of scores per m16 tile
  constexpr int kOutTiles = kHeadDim / 8;   // n8 tiles of output per m16 tile
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sQ = shared_address(smem);
  const uint32_t sK = sQ + kBlockM * kRowBytes;
  const uint32_t sV = sK + kBlockN * kRowBytes;
  // fp8: the tiles as loaded, before widen_staging.
  const uint32_t sK8 = sV + kBlockN * kRowBytes, sV8 = sK8 + kBlockN * kHeadDim;
  auto at = [&](uint32_t s) { return smem + (s - sQ); };

  const int head = blockIdx.x, kv_head = head / p.group;
  const int m0 = (gridDim.y - 1 - blockIdx.y) * kBlockM;  // latest query tiles first
  int pos = p.pos, n = p.n;
  int64_t row_base = 0;  // of the sequence in q, k, v and out
  if (p.seq_offsets) {
    row_base = p.seq_offsets[blockIdx.z];
    pos = 0;
    n = p.seq_offsets[blockIdx.z + 1] - static_cast<int>(row_base);
    if (m0 >= n) return;  // a tile past this sequence's end (the grid covers the longest)
  }
  const int q_pos0 = pos + m0;                                      // position of the tile's row 0
  const int kv_len = pos + n;                                       // cache rows that may be read
  const int kv_end = kCausal ? min(q_pos0 + kBlockM, kv_len) : kv_len;  // keys the tile can see
  const int n_tiles = (kv_end + kBlockN - 1) / kBlockN;
  // Tiles of keys every query sees: causal, those before the tile's first
  // query; else all but a last partial tile.
  const int n_unmasked = kCausal ? (q_pos0 + 1) / kBlockN : kv_len / kBlockN;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row0 = warp * kWarpRows;
  const int warp_last_pos = kCausal ? q_pos0 + row0 + kWarpRows - 1 : kv_len;

  const T* kg = static_cast<const T*>(p.k) + row_base * p.kv_ld + kv_head * kHeadDim;
  const T* vg = static_cast<const T*>(p.v) + row_base * p.kv_ld + kv_head * kHeadDim;
  // Row r of the key (value) tile at position k0 + r.
  const int32_t* blocks = p.blocks;
  const int shift = p.block_shift, kv_ld = p.kv_ld, q_ld = p.q_ld;
  auto key_rows = [=](int k0) { return [=](int r) { return kg + pool_row(blocks, shift, k0 + r) * kv_ld; }; };
  auto value_rows = [=](int k0) { return [=](int r) { return vg + pool_row(blocks, shift, k0 + r) * kv_ld; }; };
  const __nv_bfloat16* qg = p.q + (row_base + m0) * p.q_ld + head * kHeadDim;
  load_tile<kHeadDim, kBlockM, kThreads>(sQ, [=](int r) { return qg + int64_t{r} * q_ld; }, n - m0);
  // A K or V tile of the cache: straight into its tile, or (fp8) its staging tile.
  auto load_kv = [&](uint32_t tile, uint32_t staging, auto rows, int valid) {
    if constexpr (kFp8)
      load_staging<kHeadDim, kBlockN>(staging, rows, valid);
    else
      load_tile<kHeadDim, kBlockN, kThreads>(tile, rows, valid);
  };
  load_kv(sK, sK8, key_rows(0), kv_len);
  cp_async_commit();

  // ldmatrix row addresses of this lane. Every row it names is lane % 8 modulo
  // 8, so the swizzle term is the same for all three tiles.
  const int sw = lane & 7;
  // A = Q: lanes 16-31 address columns 8-15.
  const uint32_t q_base = sQ + (row0 + (lane & 15)) * kRowBytes + (((lane >> 4) ^ sw) << 4);
  // B = K^T: matrices 1 and 3 (lanes 8-15, 24-31) are dims 8-15.
  const uint32_t k_base =
      sK + ((lane >> 4) * 8 + (lane & 7)) * kRowBytes + ((((lane >> 3) & 1) ^ sw) << 4);
  // B = V, transposed load: matrices 2 and 3 (lanes 16-31) are dims 8-15.
  const uint32_t v_base =
      sV + (((lane >> 3) & 1) * 8 + (lane & 7)) * kRowBytes + (((lane >> 4) ^ sw) << 4);

  // Accumulator fragment element e of m-tile mt holds row g + 8 * (e / 2) and
  // column 2 * t + e % 2 of its n8 tile, with g = lane / 4 and t = lane % 4.
  float o[kMTiles][kOutTiles][4] = {};
  float m[kMTiles][2], l[kMTiles][2];  // running max (raw score units) and this lane's partial sum
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) m[mt][hr] = -INFINITY, l[mt][hr] = 0;

  for (int j = 0; j < n_tiles; ++j) {
    const int k0 = j * kBlockN;
    cp_async_wait_committed();
    __syncthreads();  // K_j has landed; every warp is done reading V_{j-1}
    if constexpr (kFp8) widen_staging<kHeadDim, kBlockN>(at(sK8), at(sK));
    load_kv(sV, sV8, value_rows(k0), kv_len - k0);
    cp_async_commit();
    if constexpr (kFp8) __syncthreads();  // K_j widened

    // Tile 0 is active for every warp, so each row's max is finite from then on.
    const bool active = k0 <= warp_last_pos;
    float s[kMTiles][kScoreTiles][4];
    if (active) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kScoreTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0;
#pragma unroll
      for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        uint32_t a[kMTiles][4];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt)
          ldmatrix_x4(a[mt], chunk_address(q_base, kk) + mt * 16 * kRowBytes);
#pragma unroll
        for (int np = 0; np < kBlockN / 16; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, chunk_address(k_base, kk) + np * 16 * kRowBytes);
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            mma_bf16(s[mt][2 * np], a[mt], b[0], b[1]);
            mma_bf16(s[mt][2 * np + 1], a[mt], b[2], b[3]);
          }
        }
      }
    }
    cp_async_wait_committed();
    __syncthreads();  // V_j has landed; every warp is done reading K_j
    if constexpr (kFp8) widen_staging<kHeadDim, kBlockN>(at(sV8), at(sV));
    if (j + 1 < n_tiles) {
      load_kv(sK, sK8, key_rows(k0 + kBlockN), kv_len - k0 - kBlockN);
      cp_async_commit();
    }
    if constexpr (kFp8) __syncthreads();  // V_j widened
    if (!active) continue;

    if (j >= n_unmasked) {  // causal: the tile crosses the diagonal (key > query masked); else keys past the end
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kScoreTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int q_pos = q_pos0 + row0 + mt * 16 + (lane >> 2) + 8 * (e >> 1);
            const int key = k0 + nt * 8 + 2 * (lane & 3) + (e & 1);
            if (kCausal ? key > q_pos : key >= kv_len) s[mt][nt][e] = -INFINITY;
          }
    }

#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        float mx = m[mt][hr];
#pragma unroll
        for (int nt = 0; nt < kScoreTiles; ++nt)
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hr], s[mt][nt][2 * hr + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 lanes of a row
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float corr = fast_exp2((m[mt][hr] - mx) * p.scale_log2);  // 0 on the first tile
        const float mx_scaled = mx * p.scale_log2;
        m[mt][hr] = mx;
        float sum = 0;
#pragma unroll
        for (int nt = 0; nt < kScoreTiles; ++nt)
#pragma unroll
          for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
            s[mt][nt][e] = fast_exp2(fmaf(s[mt][nt][e], p.scale_log2, -mx_scaled));
            sum += s[mt][nt][e];
          }
        l[mt][hr] = fmaf(l[mt][hr], corr, sum);
#pragma unroll
        for (int dt = 0; dt < kOutTiles; ++dt) {
          o[mt][dt][2 * hr] *= corr;
          o[mt][dt][2 * hr + 1] *= corr;
        }
      }
    }

    // O += P V_j: the score accumulators of n-tiles 2kk, 2kk+1 are exactly the
    // A fragment of keys [16kk, 16kk + 16).
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        a[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < kHeadDim / 16; ++dp) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, chunk_address(v_base, dp) + kk * 16 * kRowBytes);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_bf16(o[mt][2 * dp], a[mt], b[0], b[1]);
          mma_bf16(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
        }
      }
    }
  }

  // Normalize, stage the warp's rows as bf16 in its own rows of the Q tile
  // (no other warp reads them), then store 16-byte chunks of whole rows.
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      float sum = l[mt][hr];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = 1.0f / sum;
      const int row = row0 + mt * 16 + (lane >> 2) + 8 * hr;
#pragma unroll
      for (int dt = 0; dt < kOutTiles; ++dt) {
        const uint32_t off = tile_offset<kHeadDim>(row, dt) + 4 * (lane & 3);
        *reinterpret_cast<uint32_t*>(smem + off) =
            pack_bf16(o[mt][dt][2 * hr] * inv, o[mt][dt][2 * hr + 1] * inv);
      }
    }
  }
  __syncwarp();
#pragma unroll
  for (int it = 0; it < kWarpRows * kChunks / 32; ++it) {
    const int c = it * 32 + lane;
    const int row = row0 + c / kChunks, chunk = c % kChunks;
    if (m0 + row >= n) continue;
    const uint4 val = *reinterpret_cast<const uint4*>(smem + tile_offset<kHeadDim>(row, chunk));
    *reinterpret_cast<uint4*>(p.out + (row_base + m0 + row) * p.out_ld + head * kHeadDim + chunk * 8) = val;
  }
}

// Keys per tile: hd 128 takes 64 (O holds 128 registers a lane at 128
// queries); hd 64 takes 128 (half the O, so twice the keys for the same
// registers).
// p.n: the longest sequence's rows; `seqs` sequences (packed: p.seq_offsets).
template <int kHeadDim, int kBlockM, bool kCausal, typename T>
void launch_attention(const AttentionParams& p, int n_heads, int seqs, cudaStream_t stream) {
  constexpr int kBlockN = kHeadDim == 128 ? 64 : 128;
  constexpr int kSmem = (kBlockM + 2 * kBlockN) * kHeadDim * 2 + (sizeof(T) == 1 ? 2 * kBlockN * kHeadDim : 0);
  const auto kernel = attention_kernel<kHeadDim, kBlockN, kBlockM, kCausal, T>;
  FSVD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const int m_tiles = (p.n + kBlockM - 1) / kBlockM;
  check(m_tiles <= kMaxGridY && seqs <= kMaxGridY, "attention", "n ", p.n, " x ", seqs,
        " sequences is too large for one launch");
  kernel<<<dim3(n_heads, m_tiles, seqs), kThreads, kSmem, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("attention_kernel");
}

// Whether tiles of 128 queries (of n a sequence) fill more than a wave of
// two CTAs an SM.
bool big_tiles_fill_a_wave(int n_heads, int seqs, int n) {
  return int64_t{n_heads} * seqs * ((n + 127) / 128) > int64_t{ctas_per_sm(128)} * sm_count();
}

// 128-query tiles when they fill at least a wave of CTAs, else 64.
template <int kHeadDim, bool kCausal, typename T = __nv_bfloat16>
void launch_attention(const AttentionParams& p, int n_heads, int seqs, cudaStream_t stream) {
  if (big_tiles_fill_a_wave(n_heads, seqs, p.n))
    launch_attention<kHeadDim, 128, kCausal, T>(p, n_heads, seqs, stream);
  else
    launch_attention<kHeadDim, 64, kCausal, T>(p, n_heads, seqs, stream);
}

void check_aligned(const void* ptr, int64_t ld, const char* where) {
  check(ptr != nullptr, where, "null argument");
  check(reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && ld % 8 == 0, where,
        "operands must be 16-byte aligned with row strides of a multiple of 8");
}

}  // namespace

bool prefill_attention_supports(const HeadShape& shape) { return shape.head_dim == 64 || shape.head_dim == 128; }

void prefill_attention(const __nv_bfloat16* q, const KvCacheLayer& cache, const int32_t* blocks, int pos, int n,
                       const HeadShape& shape, __nv_bfloat16* out, cudaStream_t stream) {
  const char* where = "prefill_attention";
  check_head_shape(shape, where);
  check(prefill_attention_supports(shape), where, "head_dim ", shape.head_dim, " is not supported (64 or 128)");
  check_cache(cache, where);
  check(cache.type == ElementType::BF16 || cache.type == ElementType::F8E4M3, where,
        "needs a bf16 or fp8 KV cache");
  check(n >= 1, where, "n ", n, " must be positive");
  check(pos >= 0 && (blocks || int64_t{pos} + n <= cache.rows()), where, "positions [", pos, ", ",
        int64_t{pos} + n, ") do not fit a cache of ", cache.rows(), " rows");
  check(q != nullptr && out != nullptr, where, "null argument");
  check(reinterpret_cast<uintptr_t>(q) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0,
        where, "q and out must be 16-byte aligned");
  AttentionParams p{};
  p.q = q;
  p.k = cache.k;
  p.v = cache.v;
  p.blocks = blocks;
  p.block_shift = __builtin_ctz(static_cast<unsigned>(cache.block_size));
  p.out = out;
  p.pos = pos;
  p.n = n;
  p.group = shape.n_heads / shape.n_kv_heads;
  p.q_ld = p.out_ld = shape.n_heads * shape.head_dim;
  p.kv_ld = shape.n_kv_heads * shape.head_dim;
  p.scale_log2 = kLog2e / std::sqrt(static_cast<float>(shape.head_dim));
  const bool fp8 = cache.type == ElementType::F8E4M3;
  if (shape.head_dim == 128)
    fp8 ? launch_attention<128, true, __nv_fp8_e4m3>(p, shape.n_heads, 1, stream)
        : launch_attention<128, true>(p, shape.n_heads, 1, stream);
  else
    fp8 ? launch_attention<64, true, __nv_fp8_e4m3>(p, shape.n_heads, 1, stream)
        : launch_attention<64, true>(p, shape.n_heads, 1, stream);
}

void packed_attention(const PackedRows& q, const PackedRows& k, const PackedRows& v, const int32_t* seq_offsets,
                      int seqs, int max_len, const HeadShape& shape, const PackedRowsOut& out, cudaStream_t stream,
                      int scale_head_dim) {
  const char* where = "packed_attention";
  check_head_shape(shape, where);
  check(prefill_attention_supports(shape), where, "head_dim ", shape.head_dim, " is not supported (64 or 128)");
  check(seqs >= 1 && max_len >= 1 && seq_offsets, where, seqs, " sequences of at most ", max_len, " rows");
  for (const PackedRows* r : {&q, &k, &v}) check_aligned(r->data, r->ld, where);
  check_aligned(out.data, out.ld, where);
  AttentionParams p{};
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  p.out = out.data;
  p.n = max_len;
  p.group = shape.n_heads / shape.n_kv_heads;
  p.q_ld = static_cast<int>(q.ld);
  p.kv_ld = static_cast<int>(k.ld);
  p.out_ld = static_cast<int>(out.ld);
  check(k.ld == v.ld, where, "k and v must share a row stride");
  check(scale_head_dim >= 0, where, "scale_head_dim ", scale_head_dim);
  p.scale_log2 = kLog2e / std::sqrt(static_cast<float>(scale_head_dim > 0 ? scale_head_dim : shape.head_dim));
  p.seq_offsets = seq_offsets;
  // The wgmma kernel (128 queries a CTA) where its tiles fill a wave; below
  // that this kernel's 64-query tiles spread the work over more SMs and were
  // faster (bench/results/2026-12-03-session27).
  if (packed_attention_sm90_supports(shape.head_dim) && big_tiles_fill_a_wave(shape.n_heads, seqs, max_len))
    packed_attention_sm90(q, k, v, seq_offsets, seqs, max_len, shape.n_heads, p.group, out, p.scale_log2, stream);
  else if (shape.head_dim == 128)
    launch_attention<128, false>(p, shape.n_heads, seqs, stream);
  else
    launch_attention<64, false>(p, shape.n_heads, seqs, stream);
}

}  // namespace fsvd::cuda
