// Decode attention for a batch of tokens (see decode_attention.h).
//
// Slices: CTA (split, kv head, row and head chunk) owns a slice of its row's
// positions and up to kMaxHeads query heads that share the kv head, so each
// K/V row is read once per slice whatever the GQA ratio. A position's pool
// row comes from the sequence's block table (a lookup per row, issued a
// round of batches ahead; block sizes are powers of two, so a shift and a
// mask). A row of head_dim
// values is read by head_dim / 8 lanes, 8 values each (one 16-byte load for a
// bf16 cache, two for fp32, one 8-byte load for fp8 e4m3: the element type is
// a template parameter that only changes the loads, their unpacking and the
// token's rounding), in a lane group of the next
// power of two (head_dim 80 and 96 leave 6 and 4 of 16 lanes idle, so the
// shuffle reductions stay butterflies); a warp thus covers 32 / group width
// rows per load, and each of these lane groups runs its own online softmax
// (max, sum, unnormalized output) over the rows it reads, in batches of rows
// so that one rescale serves several rows, with the next batch's loads issued
// before the current one is consumed (two register buffers). Scores are kept
// in the log2 domain (q is pre-scaled by log2(e) / sqrt(head_dim), so
// exp2f does the work). At the end the lane groups merge through shuffles,
// the warps through shared memory, and the slice's (max, sum, output) goes to
// the workspace. The slicing derives from the row's position alone, so the
// grid is fixed by max_ctx and the batch (graph capture) while the work per
// CTA follows the length. A row whose whole length is one slice writes its
// output directly: no workspace, no arrival.
//
// The token's own row. q and k are rotated in registers: a lane holds 8
// consecutive dims, and the other member of each rotation pair sits
// head_dim / 16 lanes away (one shuffle). The CTA whose slice ends at the
// token rotates k, rounds k and v to the cache type, stores them at the
// position's slot (head chunk 0 does) and seeds one lane group's softmax
// with that row, so no thread reads a cache row written by this launch. This
// replaced a RoPE + store kernel before the attention: one launch fewer a
// layer.
//
// Merge. Each CTA counts itself in with an atomic after its slice's results
// are visible (threadfence); the last CTA of a head group to arrive merges the
// slices in slice order (bitwise reproducible, unlike atomics on the output)
// and resets the counter for the next launch. This replaced a combine kernel.
//
// Programmatic dependent launch: each warp's first K/V rows, written by
// earlier steps, are requested and the RoPE angles computed before waiting
// for the previous kernel (positions and block tables, like the cache rows,
// are written before the step, not by that kernel), so the cache stream
// starts under that kernel's tail and only q's loads follow the wait.
#include "backends/cuda/decode_attention.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/rope.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxHeads = 8;       // query heads per CTA; larger groups take several CTAs
constexpr int kMinSplitLen = 32;   // shorter slices cost more in merging than they save
constexpr int kMaxSplits = 256;    // the merge walks the slices serially
constexpr int kMaxCtasPerSm = 4;    // more slices than this buys no bandwidth, costs merging

struct Params {
  QkvRows qkv;  // the rows' q, k, v before RoPE
  const float* inv_freq;
  void* k;  // pool rows of T (the kernel's template parameter)
  void* v;
  PagedRows rows;
  int block_shift;  // log2(block_size)
  int max_ctx, group, n_heads, kv_dim, splits, head_chunks;
  float scale_log2;  // log2(e) / sqrt(head_dim)
  float* ws_acc;     // [batch][n_heads][splits][head_dim] unnormalized outputs
  float* ws_ml;      // [batch][n_heads][splits][2] (max in log2 units, sum of exp2)
  int* arrivals;     // [batch][n_kv_heads][head_chunks] slices done, zero between launches
  void* out;         // fp32, or bf16 when out_bf16
  bool out_bf16;
};

// Output value i (of all rows) as the launch asked for it.
__device__ __forceinline__ void store_out(const Params& p, int64_t i, float v) {
  if (p.out_bf16)
    static_cast<__nv_bfloat16*>(p.out)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float*>(p.out)[i] = v;
}

// Positions per slice for a valid length; identical in both passes.
__device__ __forceinline__ int slice_len(int len, int splits) {
  return max((len + splits - 1) / splits, kMinSplitLen);
}

// The reference point of an online-softmax rescale by the new maximum. A side
// that has seen no position has max -inf and sum = output = 0; keeping the
// reference finite gives it weight exp2(-inf) = 0 instead of NaN.
__device__ __forceinline__ float finite_ref(float m_new) { return m_new == -INFINITY ? 0.0f : m_new; }

// Adds 1 to *counter at GPU scope with acquire-release order; returns the old value.
__device__ __forceinline__ int arrive_acq_rel(int* counter) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  return old;
}

// Eight consecutive cache values of type T as raw bits, 8 * sizeof(T) bytes:
// one 16-byte load for bf16, two for fp32, one 8-byte load for fp8.
template <typename T>
struct Raw8 {
  static constexpr int kBytes = 8 * sizeof(T);
  uint32_t w[kBytes / 4];
};

// Read once a step: first to leave L2 (`policy`: l2_evict_first_policy()).
template <typename T>
__device__ __forceinline__ Raw8<T> load_cache8(const uint8_t* p, uint64_t policy) {
  Raw8<T> r;
  if constexpr (sizeof(T) == 1) {
    asm("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(r.w[0]), "=r"(r.w[1]) : "l"(p), "l"(policy));
  } else {
#pragma unroll
    for (int i = 0; i < Raw8<T>::kBytes / 16; ++i)
      asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(r.w[4 * i]), "=r"(r.w[4 * i + 1]), "=r"(r.w[4 * i + 2]), "=r"(r.w[4 * i + 3])
          : "l"(p + 16 * i), "l"(policy));
  }
  return r;
}

template <typename T>
__device__ __forceinline__ void unpack8(const Raw8<T>& r, float* f) {
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = __uint_as_float(r.w[i]);
  } else if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int i = 0; i < 4; ++i) f[2 * i] = bf16_lo(r.w[i]), f[2 * i + 1] = bf16_hi(r.w[i]);
  } else {
    unpack_e4m3x4(r.w[0], f);
    unpack_e4m3x4(r.w[1], f + 4);
  }
}

// A value as the cache stores it (bf16, fp8: rounded to nearest even).
template <typename T>
__device__ __forceinline__ float as_stored(float x) {
  if constexpr (sizeof(T) == 4) return x;
  else if constexpr (sizeof(T) == 2) return __bfloat162float(__float2bfloat16_rn(x));
  else return round_e4m3(x);
}

// Eight values (exactly representable in T) stored as T at a 8 * sizeof(T)-byte aligned p.
template <typename T>
__device__ __forceinline__ void store8(void* p, const float* f) {
  if constexpr (sizeof(T) == 4) {
    reinterpret_cast<float4*>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
  } else if constexpr (sizeof(T) == 2) {
    *reinterpret_cast<uint4*>(p) =
        make_uint4(pack_bf16(f[0], f[1]), pack_bf16(f[2], f[3]), pack_bf16(f[4], f[5]), pack_bf16(f[6], f[7]));
  } else {
    *reinterpret_cast<uint2*>(p) = make_uint2(pack_e4m3x4(f[0], f[1], f[2], f[3]), pack_e4m3x4(f[4], f[5], f[6], f[7]));
  }
}

// Eight fp32 values of the token's q, k or v: scalar loads, since the caller
// may pass any slice of a packed output (decode_attention.h asks no alignment).
__device__ __forceinline__ void load_token8(const float* p, float* f) {
#pragma unroll
  for (int e = 0; e < 8; ++e) f[e] = p[e];
}

// RoPE on the 8 dims this lane holds; the other member of each pair is in
// lane `partner`. Every lane of the warp must call it.
__device__ __forceinline__ void rotate8(float* x, const float* sn, const float* cs, bool first_half, int partner) {
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float other = __shfl_sync(0xffffffffu, x[e], partner);
    x[e] = first_half ? rope_first(x[e], other, sn[e], cs[e]) : rope_second(other, x[e], sn[e], cs[e]);
  }
}

template <typename T, int kHeadDim, int kHeads>
__global__ void __launch_bounds__(kThreads) attention_kernel(const Params p) {
  constexpr int kChunkBytes = Raw8<T>::kBytes;
  constexpr int kUsedLanes = kHeadDim / 8;  // lanes holding a row's values
  // The lane group of a row: a power of two (shuffle butterflies), idle lanes past kUsedLanes.
  constexpr int kLanesPerRow = kUsedLanes <= 8 ? 8 : kUsedLanes <= 16 ? 16 : 32;
  constexpr int kHalfLanes = kUsedLanes / 2;  // lanes per half of a head
  constexpr int kSlots = 32 / kLanesPerRow;   // rows a warp covers per load
  // Rows per lane group per step: bounded by registers, so fp32 rows, twice
  // the bits, take half as many (the same bytes in flight). One head per CTA
  // (MHA) takes 8: 128 registers, still 4 CTAs per SM, and a 33-40-row slice
  // (512-640 tokens in 16 slices) in one step instead of two, which decodes
  // faster (bench/kernels/decode_attention_notes.md).
  // fp8 rows, half the bits, take as many as bf16 (their registers unpacked
  // are the same).
  constexpr int kRows = (kHeads >= 8 ? 2 : kHeads == 1 ? 8 : 4) / (sizeof(T) == 4 ? 2 : 1);
  // Those rows as two batches of half as many where there are two: the next
  // batch's loads are in flight while the current one is consumed, in the
  // same registers as one batch of kRows.
  constexpr int kStages = kRows >= 2 ? 2 : 1;
  constexpr int kBatch = kRows / kStages;
  constexpr int kWorkers = kWarps * kSlots;    // lane groups per CTA
  constexpr int kStep = kWorkers * kBatch;     // rows a CTA covers per batch
  __shared__ float4 s_acc[kWarps][kHeads][kHeadDim / 4];
  __shared__ float s_m[kWarps][kHeads], s_l[kWarps][kHeads];
  __shared__ bool s_last;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = lane % kLanesPerRow, slot = lane / kLanesPerRow;
  const bool lane_used = c < kUsedLanes;
  const int b = blockIdx.z / p.head_chunks, chunk = blockIdx.z % p.head_chunks;
  const int hq0 = chunk * kHeads;
  const int nh = min(kHeads, p.group - hq0);
  const int head0 = blockIdx.y * p.group + hq0;
  const int64_t out0 = (int64_t{b} * p.n_heads + head0) * kHeadDim;  // this CTA's first output value

  const int pos = p.rows.pos[b];
  if (pos < 0 || pos >= p.max_ctx) {
    // A padding row's zeros, or NaN for a position past the cache. After the
    // wait: a kernel before this one may still read the previous layer's out.
    wait_for_previous_kernel();
    if (blockIdx.x == 0)
      for (int i = threadIdx.x; i < nh * kHeadDim; i += kThreads) store_out(p, out0 + i, pos < 0 ? 0.0f : nanf(""));
    return;
  }
  const int len = pos + 1;
  const int slen = slice_len(len, p.splits);
  const int row0 = blockIdx.x * slen;
  if (row0 >= len) return;  // a slice past the valid length: nothing to do
  const int row_end = min(row0 + slen, len);
  const bool owns_token = row_end == len;
  const int cached_end = owns_token ? pos : row_end;  // rows [row0, cached_end) come from the cache

  // Position t's pool row through the sequence's block table.
  const int32_t* table = p.rows.block_tables + int64_t{p.rows.seq ? p.rows.seq[b] : b} * p.rows.max_blocks;
  const int block_mask = (1 << p.block_shift) - 1;
  auto pool_row = [&](int32_t block, int t) { return (int64_t{block} << p.block_shift) | (t & block_mask); };
  const int64_t stride = int64_t{p.kv_dim} * sizeof(T);  // row stride in bytes
  const uint8_t* kp = static_cast<const uint8_t*>(p.k) + (blockIdx.y * kUsedLanes + c) * kChunkBytes;
  const uint8_t* vp = static_cast<const uint8_t*>(p.v) + (blockIdx.y * kUsedLanes + c) * kChunkBytes;
  const uint64_t policy = l2_evict_first_policy();
  Raw8<T> kw[kStages][kBatch], vw[kStages][kBatch];
  bool ok[kStages][kBatch];
  // The blocks of the rows each buffer loads next. Batches are loaded in
  // order, kStep rows apart, alternating between the buffers, so each load
  // fetches the blocks of its buffer's next batch (kStages batches on) while
  // its own rows are in flight: after the first batches, no table lookup
  // stands before a batch's loads.
  int32_t blocks[kStages][kBatch];
  auto fetch_blocks = [&](int stage, int base) {
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      const int row = base + r * kWorkers + slot;
      blocks[stage][r] = row < cached_end ? __ldg(table + (row >> p.block_shift)) : 0;
    }
  };
  // Batch `base` into buffer `stage` (a constant wherever this is inlined).
  auto load_rows = [&](int stage, int base) {
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      const int row = base + r * kWorkers + slot;
      ok[stage][r] = row < cached_end;  // rows past the slice may hold anything: never read them
      const bool load = ok[stage][r] && lane_used;
      const int64_t at = pool_row(blocks[stage][r], row) * stride;
      kw[stage][r] = load ? load_cache8<T>(kp + at, policy) : Raw8<T>{};
      vw[stage][r] = load ? load_cache8<T>(vp + at, policy) : Raw8<T>{};
    }
    fetch_blocks(stage, base + kStages * kStep);
  };
  const int first_base = row0 + warp * kSlots;
#pragma unroll
  for (int stage = 0; stage < kStages; ++stage) fetch_blocks(stage, first_base + stage * kStep);
  // The token's slot, in the CTA that stores it: its block asked for now, used after the wait.
  const int32_t token_block = owns_token ? __ldg(table + (pos >> p.block_shift)) : 0;
  load_rows(0, first_base);
  // The angles of this lane's 8 dims, shared by q and k: they depend only on
  // pos and constants, so they are computed before the wait.
  const bool first_half = c < kHalfLanes;
  const int partner = first_half ? lane + kHalfLanes : lane - kHalfLanes;
  float sn[8], cs[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) rope_angle(pos, p.inv_freq[(c % kHalfLanes) * 8 + e], &sn[e], &cs[e]);
  allow_next_kernel_to_launch();
  wait_for_previous_kernel();

  float qr[kHeads][8];
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    float x[8] = {};
    if (g < nh && lane_used) load_token8(p.qkv.q + b * p.qkv.ldq + (head0 + g) * kHeadDim + c * 8, x);
    rotate8(x, sn, cs, first_half, partner);
    // Idle lanes (head_dim 80, 96) got their partner's values rotated in:
    // zero, so that no score takes them in.
#pragma unroll
    for (int e = 0; e < 8; ++e) qr[g][e] = lane_used ? x[e] * p.scale_log2 : 0.0f;
  }

  // Dot product of q head g with a row whose 8 dims of this lane are kf,
  // summed over the lane group.
  auto score = [&](int g, const float* kf) {
    float d = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) d = fmaf(qr[g][e], kf[e], d);
#pragma unroll
    for (int off = kLanesPerRow / 2; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);
    return d;
  };

  float m[kHeads], l[kHeads], acc[kHeads][8];
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0;
  }
  if (owns_token) {  // uniform across the CTA
    float kf[8] = {}, vf[8] = {};
    if (lane_used) {
      load_token8(p.qkv.k + b * p.qkv.ldk + blockIdx.y * kHeadDim + c * 8, kf);
      load_token8(p.qkv.v + b * p.qkv.ldv + blockIdx.y * kHeadDim + c * 8, vf);
    }
    rotate8(kf, sn, cs, first_half, partner);
#pragma unroll
    for (int e = 0; e < 8; ++e) kf[e] = as_stored<T>(kf[e]), vf[e] = as_stored<T>(vf[e]);
    const bool seed = warp == 0 && slot == 0;
    if (seed && chunk == 0 && lane_used) {
      const int64_t at = pool_row(token_block, pos) * p.kv_dim + blockIdx.y * kHeadDim + c * 8;
      store8<T>(static_cast<T*>(p.k) + at, kf);
      store8<T>(static_cast<T*>(p.v) + at, vf);
    }
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      const float d = score(g, kf);
      if (seed) {
        m[g] = d;
        l[g] = 1;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = vf[e];
      }
    }
  }

  // The online softmax over the batch in buffer `stage`.
  auto consume = [&](int stage) {
    float s[kBatch][kHeads];
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      float kf[8];
      unpack8(kw[stage][r], kf);
#pragma unroll
      for (int g = 0; g < kHeads; ++g) {
        const float d = score(g, kf);
        s[r][g] = ok[stage][r] ? d : -INFINITY;
      }
    }
    float vf[kBatch][8];
#pragma unroll
    for (int r = 0; r < kBatch; ++r) unpack8(vw[stage][r], vf[r]);
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      float mx = s[0][g];
#pragma unroll
      for (int r = 1; r < kBatch; ++r) mx = fmaxf(mx, s[r][g]);
      const float m_new = fmaxf(m[g], mx), ref = finite_ref(m_new);
      const float corr = exp2f(m[g] - ref);
      float pr[kBatch], psum = 0;
#pragma unroll
      for (int r = 0; r < kBatch; ++r) psum += pr[r] = exp2f(s[r][g] - ref);
      l[g] = fmaf(l[g], corr, psum);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float a = acc[g][e] * corr;
#pragma unroll
        for (int r = 0; r < kBatch; ++r) a = fmaf(pr[r], vf[r][e], a);
        acc[g][e] = a;
      }
      m[g] = m_new;
    }
  };
  // Batches alternate between the buffers; each batch's successor is
  // requested before it is consumed. The bounds are uniform across the warp
  // (the shuffles in score() need all lanes).
  for (int base = first_base; base < cached_end; base += kStages * kStep) {
#pragma unroll
    for (int stage = 0; stage < kStages; ++stage) {
      const int batch = base + stage * kStep;
      if (batch >= cached_end) break;
      if constexpr (kStages == 1) {
        if (batch != first_base) load_rows(0, batch);
      } else if (batch + kStep < cached_end) {
        load_rows(stage ^ 1, batch + kStep);
      }
      consume(stage);
    }
  }

  // Merge the lane groups of the warp (lanes with the same c), then the warps.
#pragma unroll
  for (int off = kLanesPerRow; off < 32; off *= 2) {
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m[g], off);
      const float m_new = fmaxf(m[g], m2), ref = finite_ref(m_new);
      const float w1 = exp2f(m[g] - ref), w2 = exp2f(m2 - ref);
      l[g] = l[g] * w1 + __shfl_xor_sync(0xffffffffu, l[g], off) * w2;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        acc[g][e] = acc[g][e] * w1 + __shfl_xor_sync(0xffffffffu, acc[g][e], off) * w2;
      m[g] = m_new;
    }
  }
  if (slot == 0 && lane_used) {
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      s_acc[warp][g][2 * c] = make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
      s_acc[warp][g][2 * c + 1] = make_float4(acc[g][4], acc[g][5], acc[g][6], acc[g][7]);
      if (c == 0) s_m[warp][g] = m[g], s_l[warp][g] = l[g];
    }
  }
  // A row of one slice is done here; otherwise the slice goes to the workspace.
  const int active = (len + slen - 1) / slen;
  const int64_t slot0 = (int64_t{b} * p.n_heads + head0) * p.splits;  // (row, head0)'s first slice
  __syncthreads();
  for (int i = threadIdx.x; i < nh * kHeadDim; i += kThreads) {
    const int g = i / kHeadDim, d = i % kHeadDim;
    float mx = s_m[0][g];
    for (int w = 1; w < kWarps; ++w) mx = fmaxf(mx, s_m[w][g]);  // finite: the slice has a row
    float o = 0, sum = 0;
    for (int w = 0; w < kWarps; ++w) {
      const float wt = exp2f(s_m[w][g] - mx);
      o += wt * reinterpret_cast<const float*>(s_acc[w][g])[d];
      sum += wt * s_l[w][g];
    }
    if (active == 1) {
      store_out(p, out0 + i, o / sum);
      continue;
    }
    const int64_t slot_index = slot0 + int64_t{g} * p.splits + blockIdx.x;
    p.ws_acc[slot_index * kHeadDim + d] = o;
    if (d == 0) p.ws_ml[2 * slot_index] = mx, p.ws_ml[2 * slot_index + 1] = sum;
  }
  if (active == 1) return;

  // Count this slice in once its results are visible; the last to arrive merges.
  // The barrier orders the CTA's workspace writes before thread 0's
  // acquire-release add, which publishes them and, in the last CTA, makes
  // every other slice's visible to the loads after the second barrier (one
  // L2 round trip instead of a full fence, the add and another fence).
  __syncthreads();
  if (threadIdx.x == 0) {
    int* arrivals = p.arrivals + (int64_t{b} * gridDim.y + blockIdx.y) * p.head_chunks + chunk;
    s_last = arrive_acq_rel(arrivals) == active - 1;
    if (s_last) *arrivals = 0;  // every slice is in: ready for the next launch
  }
  __syncthreads();
  if (!s_last) return;
  for (int i = threadIdx.x; i < nh * kHeadDim; i += kThreads) {
    const int g = i / kHeadDim, d = i % kHeadDim;
    const int64_t first = slot0 + int64_t{g} * p.splits;
    const float* ml = p.ws_ml + 2 * first;
    const float* acc_in = p.ws_acc + first * kHeadDim + d;
    // Other CTAs wrote these: read through L2 (__ldcg), never a stale L1 line.
    // One online pass; unrolled so that 16 slices' loads (one wave's worth
    // for MHA) are in flight together.
    float mx = -INFINITY, o = 0, sum = 0;
#pragma unroll 16
    for (int sl = 0; sl < active; ++sl) {
      const float m_s = __ldcg(ml + 2 * sl), l_s = __ldcg(ml + 2 * sl + 1);
      const float a_s = __ldcg(acc_in + int64_t{sl} * kHeadDim);
      const float m_new = fmaxf(mx, m_s);  // finite: every active slice has a row
      const float corr = exp2f(mx - m_new), w = exp2f(m_s - m_new);
      sum = fmaf(sum, corr, w * l_s);
      o = fmaf(o, corr, w * a_s);
      mx = m_new;
    }
    store_out(p, out0 + i, o / sum);
  }
}

using KernelFn = void (*)(Params);

// Query heads per CTA: the group's, rounded up to an instance (1, 2, 4 or 8);
// a group past 8 takes several CTAs of 8 (head_chunks).
template <typename T, int kHeadDim>
KernelFn kernel_for_group(int group) {
  if (group == 1) return attention_kernel<T, kHeadDim, 1>;
  if (group == 2) return attention_kernel<T, kHeadDim, 2>;
  if (group <= 4) return attention_kernel<T, kHeadDim, 4>;
  return attention_kernel<T, kHeadDim, kMaxHeads>;
}

template <typename T>
KernelFn kernel_for(const HeadShape& shape) {
  const int group = shape.n_heads / shape.n_kv_heads;
  switch (shape.head_dim) {
    case 64: return kernel_for_group<T, 64>(group);
    case 80: return kernel_for_group<T, 80>(group);
    case 96: return kernel_for_group<T, 96>(group);
    case 128: return kernel_for_group<T, 128>(group);
    case 256: return kernel_for_group<T, 256>(group);
  }
  fail("decode_attention", "head_dim ", shape.head_dim, " has no kernel");
}

KernelFn kernel_for(const HeadShape& shape, ElementType cache_type) {
  switch (cache_type) {
    case ElementType::F32: return kernel_for<float>(shape);
    case ElementType::F8E4M3: return kernel_for<__nv_fp8_e4m3>(shape);
    case ElementType::BF16: break;
  }
  return kernel_for<__nv_bfloat16>(shape);
}

}  // namespace

DecodeAttentionPlan plan_decode_attention(const HeadShape& shape, int max_ctx, int batch, bool batch_invariant) {
  const char* where = "plan_decode_attention";
  check_head_shape(shape, where);
  check(max_ctx >= 1, where, "max_ctx ", max_ctx, " must be positive");
  check(batch >= 1, where, "batch ", batch, " must be positive");
  int resident = INT_MAX;
  for (ElementType type : {ElementType::BF16, ElementType::F32, ElementType::F8E4M3}) {
    int fit = 0;
    FSVD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel_for(shape, type), kThreads, 0));
    resident = std::min(resident, fit);
  }
  const int group = shape.n_heads / shape.n_kv_heads;
  DecodeAttentionPlan plan;
  plan.head_chunks = static_cast<int>(ceil_div(group, kMaxHeads));
  check(int64_t{batch} * plan.head_chunks <= 65535, where, "batch ", batch, " of ", plan.head_chunks,
        " head chunks exceeds the grid");
  // As many slices as fill one wave of resident CTAs: a second, partial wave
  // would cost as long as the first (bench/kernels/decode_attention_notes.md).
  // A batch that fills the wave alone takes one slice a row.
  const int64_t ctas_per_split = int64_t{batch_invariant ? 1 : batch} * shape.n_kv_heads * plan.head_chunks;
  const int64_t slots = int64_t{std::clamp(resident, 1, kMaxCtasPerSm)} * sm_count();
  plan.splits = static_cast<int>(std::clamp<int64_t>(
      slots / ctas_per_split, 1, std::min<int64_t>(kMaxSplits, ceil_div(max_ctx, kMinSplitLen))));
  static_assert(sizeof(int) == sizeof(float), "the arrival counters take one float slot each");
  plan.workspace_floats = size_t(batch) * (size_t(shape.n_heads) * plan.splits * (shape.head_dim + 2) +
                                           size_t(shape.n_kv_heads) * plan.head_chunks);
  return plan;
}

void decode_attention(const QkvRows& qkv, const float* inv_freq, const KvCacheLayer& cache, const PagedRows& rows,
                      int batch, int max_ctx, const HeadShape& shape, float* workspace, size_t workspace_floats,
                      AttentionOut out, cudaStream_t stream, bool pdl, bool batch_invariant) {
  const char* where = "decode_attention";
  check_head_shape(shape, where);
  check_cache(cache, where);
  check_paged_rows(rows, where);
  check(max_ctx >= 1 && max_ctx <= table_reach(rows, cache), where, "max_ctx ", max_ctx, " is past the ",
        table_reach(rows, cache), " positions a block-table row reaches");
  check(qkv.q != nullptr && qkv.k != nullptr && qkv.v != nullptr && inv_freq != nullptr && workspace != nullptr &&
            out.data != nullptr,
        where, "null argument");
  const int64_t q_dim = int64_t{shape.n_heads} * shape.head_dim, kv_dim = int64_t{shape.n_kv_heads} * shape.head_dim;
  check(qkv.ldq >= q_dim && qkv.ldk >= kv_dim && qkv.ldv >= kv_dim, where, "row strides ", qkv.ldq,
        ", ", qkv.ldk, ", ", qkv.ldv, " are shorter than the rows (", q_dim, ", ", kv_dim, ")");
  const DecodeAttentionPlan plan = plan_decode_attention(shape, max_ctx, batch, batch_invariant);
  check(workspace_floats >= plan.workspace_floats, where, "workspace of ", workspace_floats,
        " floats; this shape needs ", plan.workspace_floats);

  Params p{};
  p.qkv = qkv;
  p.inv_freq = inv_freq;
  p.k = cache.k;
  p.v = cache.v;
  p.rows = rows;
  p.block_shift = 0;
  while ((1 << p.block_shift) < cache.block_size) ++p.block_shift;
  p.max_ctx = max_ctx;
  p.group = shape.n_heads / shape.n_kv_heads;
  p.n_heads = shape.n_heads;
  p.kv_dim = static_cast<int>(kv_dim);
  p.splits = plan.splits;
  p.head_chunks = plan.head_chunks;
  p.scale_log2 = kLog2e / std::sqrt(static_cast<float>(shape.head_dim));
  const size_t slices = size_t(batch) * shape.n_heads * plan.splits;
  p.ws_acc = workspace;
  p.ws_ml = workspace + slices * shape.head_dim;
  p.arrivals = reinterpret_cast<int*>(p.ws_ml + slices * 2);
  p.out = out.data;
  p.out_bf16 = out.type == ElementType::BF16;

  cudaLaunchConfig_t config{};
  config.gridDim = dim3(plan.splits, shape.n_kv_heads, batch * plan.head_chunks);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
  config.attrs = &attr;
  config.numAttrs = 1;
  FSVD_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel_for(shape, cache.type), p));
}

}  // namespace fsvd::cuda
