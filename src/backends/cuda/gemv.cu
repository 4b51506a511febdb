// Batched GEMV kernels, bf16 or fp32 weights (see gemv.h for the contract),
// and their launch; the launch shape comes from the planner (gemv_plan.cpp).
// The layout below is described for one input vector (batch 1); "Batches"
// says what changes with more.
//
// Work layout. A CTA of `warps` warps owns a tile of rows and one column slice
// ("split"). Each warp owns kRowsPerWarp rows of W; lane l reads the 16-byte
// groups l, l + 32, ... of the slice in each of them (8 bf16 or 4 fp32 values
// each), so a warp step reads 512 contiguous bytes per row, fully coalesced.
// The weight type is a template parameter of the one kernel body: it only
// changes how a group unpacks, so bf16 compiles to the code tuned for it. The
// slice of x lives in shared memory as fp32 (as given, times the RMSNorm
// gain, or formed as silu(gate)·up) and is shared by all rows of the tile. A warp issues the loads of kUnroll steps x
// kRowsPerWarp rows before using any, and the first batch is issued before x
// is staged, so the x prologue hides under the weight loads.
//
// Split-K. When the rows are too few to give every SM work, the columns are
// cut into slices and the CTAs of one row tile form a thread-block cluster
// (Hopper): each CTA leaves its per-row partial sums in its shared memory, and
// after a cluster barrier each CTA adds up a share of the tile's outputs from
// all slices, in slice order, through distributed shared memory. Against a
// second pass or atomics into a zeroed buffer this needs no extra launch, no
// workspace and no global-memory round trips and keeps results bitwise
// reproducible. Clusters hold at most 8 CTAs (the portable limit), hence kMaxSplits.
//
// RMSNorm. y = W (x ⊙ g) / rms(x): every CTA stages all of x ⊙ g (a few KB
// from L2), summing x^2 from the same loads, and applies the scalar 1 / rms(x)
// to the finished dot products, so the norm adds no round trip. The gain is
// copied into shared memory before the PDL wait (cp.async, no registers held)
// and x read in 16-byte loads, so after the wait one round of loads stages a
// 4096-wide x instead of two, of x and gain (bench/kernels/gemv_notes.md).
//
// Programmatic dependent launch (GemvConfig::early_weights): each kernel
// issues its first weight loads, lets the next kernel launch, and only then
// waits for the previous kernel, so launch latency and the DRAM pipeline fill
// overlap the previous kernels' tails. It is applied only while each CTA
// streams at most kMaxEarlyChunkBytes of each row: with longer CTAs (the dense
// [11008, 4096]) the early CTAs land unevenly on the SMs and the call got
// slower (bench/kernels/gemv_notes.md).
// Triggering after the wait instead serializes the chain and lost everywhere.
//
// SiLU(gate)·up is formed while the down projection stages its input
// (DeviceVec::silu_mul), not in an epilogue of the gate and up GEMVs: those
// then run as a plain grouped launch (low rank) or are the packed first
// factor itself (dense), and a dense MLP needs no SiLU launch in between.
//
// Grouped launches (gemv_grouped). Up to kMaxGemvGroups independent products
// share one grid: it is the concatenation of each product's row tiles (times
// the common cluster size), and a CTA finds its product by comparing blockIdx
// with the first CTA of each, held in the kernel parameters (no memory
// round trip). From there the CTA runs the same body as a single GEMV. The
// cluster size and the CTA shape are launch-wide, so the products share the
// warps and the requested slices; a product whose columns give fewer slices
// than the cluster size leaves the extra CTAs of its tiles idle (they only
// join the cluster barriers).
//
// Batches (continuous batching: B sequences decode one token each). The point
// is to read W once per step for all B input vectors, so the weight stream
// stays as above and each 16-byte group, once in registers, is multiplied by
// the B staged x vectors; a thread keeps rows x B sums. The batch tile (1, 2,
// 4, 8, 16: the smallest power of two >= B) is a template parameter, so batch
// 1 compiles to the code tuned for it (each tile instance skips the vectors
// past B rather than computing zeros: B = 5 pays for 5, not 8). Why the
// batched instances differ where they do:
// - Shared memory: a slice of x for 16 vectors would be 256 KB, so batched
//   CTAs stage their slice in windows of window_cols(tile) columns (all tile
//   vectors, 32-72 KB with the norm's gain), restaged between weight batches;
//   the next window's weights are requested before the restaging, as the
//   first batch is before the first staging. x stays fp32 at every B: fp32
//   weights must be exact, and each vector's result is then bitwise what it is
//   alone (the same values, the same summation order), whatever the batch.
// - Staging: fp32 x goes by cp.async (a window is 16-64 KB: in registers it
//   would take several round trips to L2), 16 bytes at a time, so batched x
//   rows must be 16-byte aligned.
// - Shared-memory bandwidth: each x value loaded serves rows-per-warp FMAs;
//   at B = 16 the FMAs and these loads both near the SM's limits, so the
//   window is laid out [vector][quarter group][group] to keep a warp's 16-byte
//   loads on consecutive addresses (batch 1's [column] order has 32-byte lane
//   strides, two-way bank conflicts hidden behind its weight stream).
// - Registers: rows x tile sums plus the 8 weight loads in flight exceed the
//   64 registers of 4 CTAs an SM, so larger tiles launch fewer CTAs an SM
//   (resident_ctas; the planner counts them), tile 16 keeps 4 loads in flight
//   (loads_in_flight) beside its 64 sums, and the sums are reduced over
//   the warp by a reduce-scatter: the same butterfly as warp_sum (the same
//   bits) but about N shuffles for N sums instead of 5N.
// - RMSNorm: no CTA can stage all of x for 16 vectors; each CTA sums
//   x^2 over its own slice as it stages it, and the split-K reduction adds the
//   slices' sums beside the partial products (tried at batch 1 and measured
//   slower there, where all of x fits, so batch 1 keeps staging it all).
//   A batch-invariant launch sums each vector's whole x first, as batch 1
//   does, and scales by that instead (Params::whole_norm).
// Measured, the batched instances reach about half of batch 1's bandwidth
// at B = 2 and less beyond, below cuBLASLt's GEMM for most of LLaMA-7B's
// matrices (bench/kernels/gemv_notes.md, "Batched GEMV": the switch point
// and what was ruled out as the cause).
#include "backends/cuda/gemv.h"

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/reduce.cuh"

namespace fsvd::cuda {
namespace {

namespace cg = cooperative_groups;

using namespace gemv_limits;

constexpr int kStageLoads = 8;  // x values each thread loads before using any (latency hiding)

// window_cols and loads_in_flight, usable in device code.
template <int kTile>
constexpr int kWindowCols = window_cols(kTile);
template <int kTile>
constexpr int kLoadsInFlightFor = loads_in_flight(kTile);

enum class Epilogue { Store, Add };
using XKind = DeviceVec::Kind;

// One product of a launch.
struct Operand {
  const uint4* w;     // W as 16-byte groups
  int64_t ld_groups;  // row stride in groups
  int outputs;        // length of y
  int cols;
  int groups;        // 16-byte groups per row: ceil(cols / values per group)
  int chunk_groups;  // groups per slice
  int slices;        // column slices holding columns (<= Params::splits)
  int first_cta;     // where this product's CTAs start in the grid (INT_MAX: unused entry)
  const void* x;      // DeviceVec::data
  const float* up;    // DeviceVec::up
  float* y;
};

struct Params {
  Operand op[kMaxGemvGroups];
  int splits;         // CTAs per row tile: the cluster size
  const float* gain;  // RMSNorm weight, or null
  float eps;
  int batch;  // input vectors, at most the instance's tile
  bool whole_norm;  // batched RMSNorm: each vector's sum of squares as batch 1 takes it (GemvConfig::batch_invariant)
  // From one input (output) vector of op[i] to the next (beside Operand: its
  // 64 bytes index with a shift).
  int64_t x_ld[kMaxGemvGroups], y_ld[kMaxGemvGroups];
};

// Streaming 16-byte load: read-only, and not kept in L1 (weights are read once).
__device__ __forceinline__ uint4 load_weights(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// Weight values (T = __nv_bfloat16 or float) per 16-byte group.
template <typename T>
constexpr int kGroupValues = 16 / sizeof(T);

// Value i of a group as fp32 (i is a constant once loops are unrolled).
template <typename T>
__device__ __forceinline__ float group_value(uint4 w, int i) {
  const uint32_t word = (&w.x)[i * sizeof(T) / 4];
  if constexpr (sizeof(T) == 4) return __uint_as_float(word);
  else return i % 2 == 0 ? bf16_lo(word) : bf16_hi(word);
}

// acc + w · x over one group, in element order.
template <typename T>
__device__ __forceinline__ float dot_group(uint4 w, const float (&x)[kGroupValues<T>], float acc) {
#pragma unroll
  for (int i = 0; i < kGroupValues<T>; ++i) acc = fmaf(group_value<T>(w, i), x[i], acc);
  return acc;
}

// Zeroes the values at positions >= valid of a group that straddles the end
// of a row: the row padding may hold anything, even NaN, and 0 * NaN is NaN.
template <typename T>
__device__ __forceinline__ uint4 mask_tail(uint4 w, int valid) {
  constexpr int kPerWord = 4 / sizeof(T);
  constexpr uint32_t kValueBits = sizeof(T) == 4 ? 0xffffffffu : 0xffffu;
  uint32_t* word = &w.x;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint32_t keep = 0;
#pragma unroll
    for (int e = 0; e < kPerWord; ++e)
      if (i * kPerWord + e < valid) keep |= kValueBits << (e * 8 * sizeof(T));
    word[i] &= keep;
  }
  return w;
}

template <XKind kX>
__device__ __forceinline__ float load_x(const void* x, const float* up, int k) {
  if constexpr (kX == XKind::SiluMul)
    return fast_silu(static_cast<const float*>(x)[k]) * up[k];
  else
    return static_cast<const float*>(x)[k];
}

// Values 4 i4 .. 4 i4 + 3 of x (16-byte aligned), zero past cols, never read
// beyond it.
__device__ __forceinline__ float4 load4(const float* x, int i4, int cols) {
  const int k = 4 * i4;
  if (k + 4 <= cols) return reinterpret_cast<const float4*>(x)[i4];
  return make_float4(k < cols ? x[k] : 0.f, k + 1 < cols ? x[k + 1] : 0.f, k + 2 < cols ? x[k + 2] : 0.f, 0.f);
}

// xs[i] = x[k0 + i] for i < n, zero past cols.
template <XKind kX>
__device__ void stage_x(const void* x, const float* up, int k0, int n, int cols, float* xs) {
  for (int base = 0; base < n; base += kStageLoads * blockDim.x) {
    float v[kStageLoads];
#pragma unroll
    for (int m = 0; m < kStageLoads; ++m) {
      const int i = base + m * blockDim.x + threadIdx.x, k = k0 + i;
      v[m] = i < n && k < cols ? load_x<kX>(x, up, k) : 0.0f;
    }
#pragma unroll
    for (int m = 0; m < kStageLoads; ++m) {
      const int i = base + m * blockDim.x + threadIdx.x;
      if (i < n) xs[i] = v[m];
    }
  }
}

// The RMSNorm's gain into xs4[0 .. n4), zero past cols, copied before the PDL
// wait (it never depends on the previous kernel). Thread t copies the float4s
// t, t + blockDim.x, ...: the ones stage_normed_x has it read back.
__device__ void prefetch_gain(const float* gain, int n4, int cols, float4* xs4) {
  for (int i4 = threadIdx.x; i4 < n4; i4 += blockDim.x)
    cp_async16(xs4 + i4, gain + 4 * i4, 4 * min(max(cols - 4 * i4, 0), 4));
  cp_async_commit();
}

// kStage: xs4 = x ⊙ gain over the whole vector (the gain already there,
// from prefetch_gain), zero past cols, with 16-byte loads. Returns this
// thread's share of sum(x^2) either way: without kStage, batch 1's sum for a
// batch-invariant launch (the same loads, the same order).
template <bool kStage>
__device__ float stage_normed_x(const float* x, int n4, int cols, float4* xs4) {
  constexpr int kVecs = kStageLoads / 2;  // 16 values in flight: the registers of kStageLoads (x, gain) pairs
  if constexpr (kStage) cp_async_wait_all();
  float ss = 0;
  for (int base = 0; base < n4; base += kVecs * blockDim.x) {
    float4 v[kVecs];
#pragma unroll
    for (int m = 0; m < kVecs; ++m) v[m] = load4(x, base + m * blockDim.x + threadIdx.x, cols);
#pragma unroll
    for (int m = 0; m < kVecs; ++m) {
      const int i4 = base + m * blockDim.x + threadIdx.x;
      if (i4 >= n4) continue;
      ss = fmaf(v[m].x, v[m].x, fmaf(v[m].y, v[m].y, fmaf(v[m].z, v[m].z, fmaf(v[m].w, v[m].w, ss))));
      if constexpr (kStage) {
        const float4 g = xs4[i4];
        xs4[i4] = make_float4(v[m].x * g.x, v[m].y * g.y, v[m].z * g.z, v[m].w * g.w);
      }
    }
  }
  return ss;
}

// Where column c (of the window) of input vector b sits in a batched CTA's
// window of kWindow columns: float4 quarter q = c % kGroup / 4 of the
// 16-byte group g = c / kGroup at float4 [b][q][g], so the warp's loads of one
// quarter of 32 consecutive groups read consecutive addresses.
template <int kGroup, int kWindow>
__device__ __forceinline__ int x_slot(int b, int c) {
  return ((b * (kGroup / 4) + c % kGroup / 4) * (kWindow / kGroup) + c / kGroup) * 4 + c % 4;
}

// Batched: columns [k0, k0 + n) of input vectors b < batch (vector b at
// x + b * ld, 16-byte aligned) into the window at x_slot(b, c), zero past cols,
// 16 bytes at a time: fp32 by cp.async (all of it in flight, no registers;
// the caller waits), SiLU·up through registers.
template <XKind kX, int kTile, int kGroup>
__device__ void stage_window_x(const void* x, const float* up, int64_t ld, int batch, int k0, int n, int cols,
                               float* xs) {
  constexpr int kWindow = kWindowCols<kTile>, kQuads = kWindow / 4;
  const int quads = batch * kQuads;
  const float* xf = static_cast<const float*>(x);
  if constexpr (kX == XKind::F32) {
    for (int i = threadIdx.x; i < quads; i += blockDim.x) {
      const int b = i / kQuads, c = i % kQuads * 4, k = k0 + c;
      if (c < n) cp_async16(xs + x_slot<kGroup, kWindow>(b, c), xf + b * ld + k, 4 * min(max(cols - k, 0), 4));
    }
    cp_async_commit();
  } else {
    constexpr int kVecs = kStageLoads / 4;  // (gate, up) float4 pairs in flight: the registers of kStageLoads values
    for (int base = 0; base < quads; base += kVecs * blockDim.x) {
      float4 g[kVecs], u[kVecs];
#pragma unroll
      for (int m = 0; m < kVecs; ++m) {
        const int i = base + m * blockDim.x + threadIdx.x, b = i / kQuads, c = i % kQuads * 4;
        if (i < quads && c < n) g[m] = load4(xf + b * ld, (k0 + c) / 4, cols), u[m] = load4(up + b * ld, (k0 + c) / 4, cols);
      }
#pragma unroll
      for (int m = 0; m < kVecs; ++m) {
        const int i = base + m * blockDim.x + threadIdx.x, b = i / kQuads, c = i % kQuads * 4;
        if (i < quads && c < n)
          *reinterpret_cast<float4*>(xs + x_slot<kGroup, kWindow>(b, c)) =
              make_float4(fast_silu(g[m].x) * u[m].x, fast_silu(g[m].y) * u[m].y, fast_silu(g[m].z) * u[m].z,
                          fast_silu(g[m].w) * u[m].w);
      }
    }
  }
}

// Sums each of v[0 .. kCount) over the warp as warp_sum would (the same
// pairs of partial sums added in the same order: the same bits), but at each
// step a lane sends the half of the values it still holds that its partner
// keeps: about kCount shuffles instead of 5 kCount. Afterwards the lanes hold
// the sums in order: with kCount >= 32, sum i is v[i % (kCount / 32)] of lane
// i / (kCount / 32); else v[0] of lanes i * (32 / kCount) and the next
// 32 / kCount - 1.
template <int kCount, int kOffset = 16, int kN>
__device__ __forceinline__ void warp_reduce_scatter(float (&v)[kN], int lane) {
  if constexpr (kOffset > 0 && kCount > 1) {
    constexpr int kHalf = kCount / 2;
    const bool upper = lane & kOffset;  // keeps the upper half
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
      const float keep = upper ? v[kHalf + i] : v[i], send = upper ? v[i] : v[kHalf + i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, kOffset);
    }
    warp_reduce_scatter<kHalf, kOffset / 2>(v, lane);
  } else if constexpr (kOffset > 0) {
    v[0] += __shfl_xor_sync(0xffffffffu, v[0], kOffset);
    warp_reduce_scatter<1, kOffset / 2>(v, lane);
  }
}

// Batched RMSNorm over a staged window of n columns (its gain at gs): x ⊙ gain
// in place, and each input vector's sum of x^2 over the window added to ss[b],
// in a fixed order (a thread's columns, the warp, the warps in turn), so
// results are reproducible. `scratch` holds kMaxWarps * kTile floats.
template <int kTile, int kGroup>
__device__ void norm_window(const float* gs, int batch, int n, float* xs, float* ss, float* scratch) {
  __syncthreads();  // x and the gain staged
  float s[kTile] = {};
  for (int c = threadIdx.x; c < n; c += blockDim.x) {
    const float g = gs[c];
#pragma unroll
    for (int b = 0; b < kTile; ++b) {
      if (b >= batch) break;
      float& v = xs[x_slot<kGroup, kWindowCols<kTile>>(b, c)];
      s[b] = fmaf(v, v, s[b]);
      v *= g;
    }
  }
  const int lane = threadIdx.x % 32;
  warp_reduce_scatter<kTile>(s, lane);
  constexpr int kLanes = 32 / kTile;  // lanes holding each sum
  if (lane % kLanes == 0) scratch[threadIdx.x / 32 * kTile + lane / kLanes] = s[0];
  __syncthreads();
  if (threadIdx.x < batch) {
    float total = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += scratch[w * kTile + threadIdx.x];
    ss[threadIdx.x] += total;
  }
}

template <Epilogue kE>
__device__ __forceinline__ void finish(float* y, int o, float a) {
  if constexpr (kE == Epilogue::Store)
    y[o] = a;
  else
    y[o] += a;
}

// The product this CTA works on: the last whose first CTA it has reached.
template <int kGroups>
__device__ __forceinline__ int find_operand(const Params& p) {
  int found = 0;
#pragma unroll
  for (int i = 1; i < kGroups; ++i)
    if (static_cast<int>(blockIdx.x) >= p.op[i].first_cta) found = i;
  return found;
}

// kGroups: how many entries of Params::op the launch may use (1, or
// kMaxGemvGroups for gemv_grouped), so single GEMVs compile without the lookup.
// kTile: the batch tile (input vectors the instance holds; 1 is batch 1).
template <typename T, Epilogue kE, XKind kX, bool kNorm, int kGroups, int kRowsPerWarp, int kTile>
__global__ void __launch_bounds__(kMaxWarps * 32, resident_ctas(kTile))
    gemv_kernel(const __grid_constant__ Params p) {
  constexpr int kGroup = kGroupValues<T>;
  constexpr int kUnroll = kLoadsInFlightFor<kTile> / kRowsPerWarp;  // warp steps whose loads are in flight together
  constexpr int kWindow = kWindowCols<kTile>;  // batched: columns of x staged at once
  constexpr int kWindowGroups = kWindow / kGroup, kWindowSteps = kWindowGroups / kStepGroups;
  constexpr int kSums = kRowsPerWarp * kTile;  // a thread's dot products, [input vector][row]
  // Batch 1: fp32 [chunk_cols], or [groups * kGroup] for the norm. Batched:
  // the window (x_slot), then the norm's gain for it [kWindow].
  extern __shared__ float4 smem_x4[];
  float* xs = reinterpret_cast<float*>(smem_x4);
  __shared__ float scratch[kNorm && kTile > 1 ? kMaxWarps * kTile : 32];
  __shared__ float partials[kTile][kMaxWarps * kRowsPerWarp];  // split-K: this slice's sums, by vector, warp and row
  __shared__ float slice_ss[kTile];  // batched norm: each vector's sum of x^2 over this slice
  __shared__ float whole_ss[kTile];  // batched norm, whole_norm: each vector's over all of it

  // A reference into the parameters (grid constant): fields load where used,
  // as for a single product, instead of living in registers.
  const int which = find_operand<kGroups>(p);
  const Operand& op = p.op[which];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int batch = kTile == 1 ? 1 : p.batch;
  const unsigned block = blockIdx.x - (kGroups == 1 ? 0 : op.first_cta);  // within the product
  const int tile = block / p.splits, split = block % p.splits;  // split = rank in cluster
  const int tile_outputs = warps * kRowsPerWarp;
  const int out0 = tile * tile_outputs + warp * kRowsPerWarp;
  const int g0 = split * op.chunk_groups;
  const int n_groups = min(op.chunk_groups, op.groups - g0);  // <= 0 for an idle slice

  const uint4* row[kRowsPerWarp];
  bool row_ok[kRowsPerWarp];
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    row_ok[j] = out0 + j < op.outputs;
    row[j] = op.w + (row_ok[j] ? out0 + j : 0) * op.ld_groups + g0;
  }
  uint4 wv[kUnroll][kRowsPerWarp];
  auto load_batch = [&](int step) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int lg = (step + u) * kStepGroups + lane;
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j)
        wv[u][j] = lg < n_groups && row_ok[j] ? load_weights(row[j] + lg) : make_uint4(0, 0, 0, 0);
    }
  };
  load_batch(0);  // weights never depend on the previous kernel: fetch them first
  if constexpr (kNorm && kTile == 1) prefetch_gain(p.gain, op.groups * kGroup / 4, op.cols, smem_x4);
  // Triggering before the wait lets a chain of GEMVs have several kernels'
  // weight loads in flight; each still reads x only after its predecessor.
  allow_next_kernel_to_launch();
  wait_for_previous_kernel();

  // Batched: the window of the slice from its group `first` on (with the norm
  // applied, each vector's sum of x^2 over it added to slice_ss).
  auto stage_window = [&](int first) {
    const int k0 = (g0 + first) * kGroup, n = min(kWindowGroups, n_groups - first) * kGroup;
    float* gain = xs + kTile * kWindow;
    if constexpr (kNorm) prefetch_gain(p.gain + k0, n / 4, op.cols - k0, reinterpret_cast<float4*>(gain));
    stage_window_x<kX, kTile, kGroup>(op.x, op.up, p.x_ld[which], batch, k0, n, op.cols, xs);
    cp_async_wait_all();
    if constexpr (kNorm) norm_window<kTile, kGroup>(gain, batch, n, xs, slice_ss, scratch);
  };

  // While the first weights are in flight, stage x: this slice of it (its
  // first window when batched), or for the norm at batch 1 all of it, since
  // every CTA needs sum(x^2) over the whole vector.
  const float* xs_slice = kNorm && kTile == 1 ? xs + g0 * kGroup : xs;
  float ss = 0;
  if constexpr (kTile > 1) {
    if (kNorm && threadIdx.x < kTile) slice_ss[threadIdx.x] = 0;
    if (kNorm && p.whole_norm) {
      for (int b = 0; b < batch; ++b) {
        const float* xb = static_cast<const float*>(op.x) + b * p.x_ld[which];
        const float total = block_sum(stage_normed_x<false>(xb, op.groups * kGroup / 4, op.cols, nullptr), scratch, warps);
        if (threadIdx.x == 0) whole_ss[b] = total;
        __syncthreads();  // scratch is reused by the next vector's sum
      }
    }
    stage_window(0);
  } else if constexpr (kNorm) {
    ss = stage_normed_x<true>(static_cast<const float*>(op.x), op.groups * kGroup / 4, op.cols, smem_x4);
  } else {
    stage_x<kX>(op.x, op.up, g0 * kGroup, n_groups * kGroup, op.cols, xs);
  }
  __syncthreads();

  float acc[kSums] = {};
  const int full_groups = op.cols / kGroup;
  const int steps = (n_groups + kStepGroups - 1) / kStepGroups;
  for (int step = 0; step < steps; step += kUnroll) {
    if (step > 0) {
      load_batch(step);
      if (kTile > 1 && step % kWindowSteps == 0) {  // the next window, once every warp is done with this one
        __syncthreads();
        stage_window(step * kStepGroups);
        __syncthreads();
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int lg = (step + u) * kStepGroups + lane;
      if (lg >= n_groups) continue;
      if (g0 + lg >= full_groups) {
#pragma unroll
        for (int j = 0; j < kRowsPerWarp; ++j)
          wv[u][j] = mask_tail<T>(wv[u][j], op.cols - (g0 + lg) * kGroup);
      }
#pragma unroll
      for (int b = 0; b < kTile; ++b) {
        if (kTile > 1 && b >= batch) break;
        // Quarter q of the group's x: at batch 1 in column order, batched at x_slot.
        const float4* xp = kTile == 1 ? reinterpret_cast<const float4*>(xs_slice + lg * kGroup)
                                      : smem_x4 + b * (kGroup / 4) * kWindowGroups + lg % kWindowGroups;
        float x[kGroup];
#pragma unroll
        for (int q = 0; q < kGroup / 4; ++q) {
          const float4 v = xp[q * (kTile == 1 ? 1 : kWindowGroups)];
          x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < kRowsPerWarp; ++j)
          acc[b * kRowsPerWarp + j] = dot_group<T>(wv[u][j], x, acc[b * kRowsPerWarp + j]);
      }
    }
  }
  if constexpr (kTile == 1) {
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) acc[j] = warp_sum(acc[j]);
  } else {
    warp_reduce_scatter<kSums>(acc, lane);
  }
  // Batched: f(vector, row, sum) for each of the warp's sums, once, in the
  // lane that holds it (warp_reduce_scatter).
  auto for_each_sum = [&](auto f) {
    constexpr int kSlots = kSums >= 32 ? kSums / 32 : 1, kLanes = kSums >= 32 ? 1 : 32 / kSums;
    if (lane % kLanes != 0) return;
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int i = lane / kLanes * kSlots + s;
      f(i / kRowsPerWarp, i % kRowsPerWarp, acc[s]);
    }
  };
  auto rms_scale = [&](float sum_sq) { return 1.0f / sqrtf(sum_sq / op.cols + p.eps); };
  // Every CTA computes the same scale from the same data in the same order.
  const float scale = kNorm && kTile == 1 ? rms_scale(block_sum(ss, scratch, warps)) : 1.0f;

  if (p.splits == 1) {
    if constexpr (kTile == 1) {
#pragma unroll
      for (int j = 0; j < kRowsPerWarp; ++j)
        if (lane == j && row_ok[j]) finish<kE>(op.y, out0 + j, acc[j] * scale);
    } else {
      for_each_sum([&](int b, int j, float a) {
        if (b < batch && out0 + j < op.outputs)
          finish<kE>(op.y + b * p.y_ld[which], out0 + j,
                     kNorm ? a * rms_scale(p.whole_norm ? whole_ss[b] : slice_ss[b]) : a);
      });
    }
    return;
  }

  // Split-K across the cluster: publish, then each CTA finishes every
  // splits-th output of the tile, adding the product's slices in rank order.
  if constexpr (kTile == 1) {
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j)
      if (lane == j) partials[0][warp * kRowsPerWarp + j] = acc[j];
  } else {
    for_each_sum([&](int b, int j, float a) { partials[b][warp * kRowsPerWarp + j] = a; });
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  for (int t = split + threadIdx.x * p.splits; t < tile_outputs * batch; t += blockDim.x * p.splits) {
    const int b = kTile == 1 ? 0 : t / tile_outputs, r = kTile == 1 ? t : t % tile_outputs;  // r: warp * kRowsPerWarp + row
    const int o = tile * tile_outputs + r;
    if (o >= op.outputs) {
      if (kTile == 1) break;  // so are the outputs after it
      continue;
    }
    float a = 0, sum_sq = 0;
    for (int s = 0; s < op.slices; ++s) {
      a += cluster.map_shared_rank(partials[b], s)[r];
      if constexpr (kNorm && kTile > 1) sum_sq += cluster.map_shared_rank(slice_ss, s)[b];
    }
    if constexpr (kNorm && kTile > 1) sum_sq = p.whole_norm ? whole_ss[b] : sum_sq;
    finish<kE>(op.y + b * p.y_ld[which], o, a * (kNorm && kTile > 1 ? rms_scale(sum_sq) : scale));
  }
  cluster.sync();  // keep every CTA's partials alive until all remote reads are done
}

struct Request {
  const char* where;
  Epilogue epilogue;
  bool norm;
  const float* gain;
  float eps;
};

// One product as the caller gave it.
using Product = GemvGroup;

template <typename T, Epilogue kE, XKind kX, bool kNorm, int kGroups, int kRows, int kTile>
void launch_tile(const Params& p, const GemvPlan& plan, size_t smem, bool early_weights, cudaStream_t stream) {
  const auto kernel = gemv_kernel<T, kE, kX, kNorm, kGroups, kRows, kTile>;
  if (kTile > 1)  // windows of up to 72 KB: past the 48 KB a kernel gets unasked
    FSVD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.tiles) * plan.splits);
  config.blockDim = dim3(plan.warps * 32);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = early_weights ? 1 : 0;
  attrs[1].id = cudaLaunchAttributeClusterDimension;
  attrs[1].val.clusterDim.x = plan.splits;
  attrs[1].val.clusterDim.y = attrs[1].val.clusterDim.z = 1;
  config.attrs = attrs;
  config.numAttrs = plan.splits > 1 ? 2 : 1;  // a cluster launch only where slices meet
  FSVD_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, p));
}

// The kernel instance for the plan's batch tile.
template <typename T, Epilogue kE, XKind kX, bool kNorm, int kGroups, int kRows>
void launch_kernel(const Params& p, const GemvPlan& plan, size_t smem, bool early, cudaStream_t stream) {
  switch (plan.batch_tile) {
    case 1: return launch_tile<T, kE, kX, kNorm, kGroups, kRows, 1>(p, plan, smem, early, stream);
    case 2: return launch_tile<T, kE, kX, kNorm, kGroups, kRows, 2>(p, plan, smem, early, stream);
    case 4: return launch_tile<T, kE, kX, kNorm, kGroups, kRows, 4>(p, plan, smem, early, stream);
    case 8: return launch_tile<T, kE, kX, kNorm, kGroups, kRows, 8>(p, plan, smem, early, stream);
    default: return launch_tile<T, kE, kX, kNorm, kGroups, kRows, kMaxBatch>(p, plan, smem, early, stream);
  }
}

// The single-product kernel instance for the epilogue and input kind.
template <typename T, Epilogue kE, int kRows>
void launch_for_input(XKind x, const Params& p, const GemvPlan& plan, size_t smem, bool early,
                      cudaStream_t stream) {
  if (x == XKind::SiluMul)
    launch_kernel<T, kE, XKind::SiluMul, false, 1, kRows>(p, plan, smem, early, stream);
  else
    launch_kernel<T, kE, XKind::F32, false, 1, kRows>(p, plan, smem, early, stream);
}

// The kernel instance for the request's epilogue, input kind and product count.
template <typename T, int kRows>
void launch_for(const Request& rq, XKind x, int count, const Params& p, const GemvPlan& plan, size_t smem,
                bool early, cudaStream_t stream) {
  if (rq.norm)
    launch_kernel<T, Epilogue::Store, XKind::F32, true, 1, kRows>(p, plan, smem, early, stream);
  else if (rq.epilogue == Epilogue::Add)
    launch_for_input<T, Epilogue::Add, kRows>(x, p, plan, smem, early, stream);
  else if (count > 1)  // silu_mul inputs are refused for groups: no instance for them
    launch_kernel<T, Epilogue::Store, XKind::F32, false, kMaxGemvGroups, kRows>(p, plan, smem, early, stream);
  else
    launch_for_input<T, Epilogue::Store, kRows>(x, p, plan, smem, early, stream);
}

// The instance for the weight type and the plan's rows per warp.
template <typename T>
void launch_for_rows(const Request& rq, XKind x, int count, const Params& p, const GemvPlan& plan, size_t smem,
                     bool early, cudaStream_t stream) {
  if (plan.rows_per_warp == 2)
    launch_for<T, 2>(rq, x, count, p, plan, smem, early, stream);
  else
    launch_for<T, 4>(rq, x, count, p, plan, smem, early, stream);
}

void check_count(const Product* products, int count, const char* where) {
  check(count >= 1 && count <= kMaxGemvGroups, where, count, " groups; 1..", kMaxGemvGroups,
        " are supported");
  check(products != nullptr, where, "null group list");
}

// The planner's view of the products (gemv_plan.h).
GemvPlan plan_products(const Product* products, int count, int batch, GemvConfig cfg, bool norm, int sm_count,
                       GemvPlan* plans) {
  DeviceMatrix weights[kMaxGemvGroups];
  for (int i = 0; i < count; ++i) weights[i] = products[i].w;
  const GemvFusion fusion = norm ? GemvFusion::RmsNorm
                            : products[0].x.kind == XKind::SiluMul ? GemvFusion::SiluMul
                                                                   : GemvFusion::None;
  return plan_gemv_launch(weights, count, batch, cfg, fusion, sm_count, plans);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void launch(const Request& rq, const Product* products, int count, int batch, cudaStream_t stream,
            GemvConfig cfg) {
  const char* where = rq.where;
  check_count(products, count, where);
  check_gemv_config(cfg, where);
  check_gemv_batch(batch, where);
  const ElementType type = products[0].w.type;
  const XKind x_kind = products[0].x.kind;
  const int64_t group = values_per_16_bytes(type);
  for (int i = 0; i < count; ++i) {
    const std::string which = count > 1 ? "group " + std::to_string(i) + ": " : "";
    const DeviceMatrix& w = products[i].w;
    check(w.type == type, where, which, "weights of another type than group 0's");
    check(w.data != nullptr && aligned16(w.data), where, which, "weights must be a 16-byte aligned device pointer");
    check(w.rows >= 1 && w.cols >= 1, where, which, "empty matrix [", w.rows, ", ", w.cols, "]");
    check(w.ld >= w.cols && w.ld % group == 0, where, which, "row stride ", w.ld,
          " must be a multiple of ", group, " and >= cols ", w.cols);
    check(w.rows <= INT_MAX && w.cols <= int64_t{kMaxSplits} * kMaxChunkCols, where, which,
          "matrix [", w.rows, ", ", w.cols, "] too large (at most ", int64_t{kMaxSplits} * kMaxChunkCols,
          " columns)");
    const DeviceOut& y = products[i].y;
    check(y.data != nullptr, where, which, "null output");
    const DeviceVec& x = products[i].x;
    check(x.data != nullptr && (x.kind == XKind::SiluMul) == (x.up != nullptr), where, which,
          "null input (silu_mul needs gate and up)");
    check(x.kind == x_kind, where, which, "inputs must all be of one kind (fp32 or silu_mul)");
    if (batch > 1) {
      check(x.ld >= w.cols && y.ld >= w.rows, where, which, "input stride ", x.ld, " or output stride ", y.ld,
            " shorter than a vector (", w.cols, " in, ", w.rows, " out)");
      // Staged 16 bytes at a time.
      check(aligned16(x.data) && (x.up == nullptr || aligned16(x.up)) && x.ld % 4 == 0, where, which,
            "a batch's input vectors must start 16-byte aligned (stride ", x.ld, ")");
    }
  }
  check(count == 1 || x_kind != XKind::SiluMul, where, "silu_mul inputs are for single GEMVs");
  check(!rq.norm || (rq.gain != nullptr && x_kind == XKind::F32), where,
        "RMSNorm needs an fp32 input and a gain vector");
  check(!rq.norm || (aligned16(rq.gain) && aligned16(products[0].x.data)), where,
        "RMSNorm input and gain must be 16-byte aligned (they are read 16 bytes at a time)");
  check(!rq.norm || products[0].w.cols <= kMaxRmsnormGemvCols, where, "RMSNorm input of ", products[0].w.cols,
        " values; at most ", kMaxRmsnormGemvCols, " are supported");

  GemvPlan plans[kMaxGemvGroups];
  const GemvPlan plan = plan_products(products, count, batch, cfg, rq.norm, sm_count(), plans);
  check(int64_t{plan.tiles} * plan.splits <= INT_MAX, where, "too many rows for one launch");

  Params p{};
  p.splits = plan.splits;
  p.gain = rq.gain;
  p.eps = rq.eps;
  p.batch = batch;
  p.whole_norm = cfg.batch_invariant;
  int first_cta = 0;
  for (int i = 0; i < kMaxGemvGroups; ++i) {
    Operand& op = p.op[i];
    op.first_cta = INT_MAX;  // unused entries are never reached
    if (i >= count) continue;
    const DeviceMatrix& w = products[i].w;
    op.w = static_cast<const uint4*>(w.data);
    op.ld_groups = w.ld / group;
    op.outputs = static_cast<int>(w.rows);
    op.cols = static_cast<int>(w.cols);
    op.groups = static_cast<int>(ceil_div(w.cols, group));
    op.chunk_groups = static_cast<int>(plans[i].chunk_cols / group);
    op.slices = plans[i].splits;
    op.first_cta = first_cta;
    op.x = products[i].x.data;
    op.up = products[i].x.up;
    op.y = products[i].y.data;
    p.x_ld[i] = products[i].x.ld;
    p.y_ld[i] = products[i].y.ld;
    first_cta += plans[i].tiles * plan.splits;
  }

  const int window = window_cols(plan.batch_tile);
  const size_t staged = plan.batch_tile > 1 ? size_t(plan.batch_tile + (rq.norm ? 1 : 0)) * window
                        : rq.norm           ? size_t(p.op[0].groups) * group
                                            : size_t(plan.chunk_cols);
  const bool early = cfg.early_weights && plan.chunk_cols * element_bytes(type) <= kMaxEarlyChunkBytes;
  if (type == ElementType::F32)
    launch_for_rows<float>(rq, x_kind, count, p, plan, staged * sizeof(float), early, stream);
  else
    launch_for_rows<__nv_bfloat16>(rq, x_kind, count, p, plan, staged * sizeof(float), early, stream);
}

}  // namespace

GemvPlan plan_gemv_grouped(const GemvGroup* groups, int count, int batch, GemvConfig cfg, int sm_count) {
  const char* where = "plan_gemv_grouped";
  check_count(groups, count, where);
  check_gemv_config(cfg, where);
  check_gemv_batch(batch, where);
  GemvPlan plans[kMaxGemvGroups];
  return plan_products(groups, count, batch, cfg, false, sm_count, plans);
}

void gemv(const DeviceMatrix& w, DeviceVec x, DeviceOut y, int batch, cudaStream_t stream, GemvConfig cfg) {
  const Product product{w, x, y};
  launch({"gemv", Epilogue::Store, false, nullptr, 0.0f}, &product, 1, batch, stream, cfg);
}

void gemv_residual(const DeviceMatrix& w, DeviceVec x, DeviceOut y, int batch, cudaStream_t stream,
                   GemvConfig cfg) {
  const Product product{w, x, y};
  launch({"gemv_residual", Epilogue::Add, false, nullptr, 0.0f}, &product, 1, batch, stream, cfg);
}

void rmsnorm_gemv(const DeviceMatrix& w, DeviceVec x, const float* gain, float eps, DeviceOut y, int batch,
                  cudaStream_t stream, GemvConfig cfg) {
  const Product product{w, x, y};
  launch({"rmsnorm_gemv", Epilogue::Store, true, gain, eps}, &product, 1, batch, stream, cfg);
}

void gemv_grouped(const GemvGroup* groups, int count, int batch, cudaStream_t stream, GemvConfig cfg) {
  launch({"gemv_grouped", Epilogue::Store, false, nullptr, 0.0f}, groups, count, batch, stream, cfg);
}

}  // namespace fsvd::cuda
