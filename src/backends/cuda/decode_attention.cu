// Split-KV decode attention (see decode_attention.h).
//
// Split pass: CTA (split, kv head, head chunk) owns a slice of cache
// positions and up to kMaxHeads query heads that share the kv head, so each
// K/V row is read once per slice whatever the GQA ratio. A row of head_dim
// values is read by head_dim / 8 lanes, 8 values each (one 16-byte load for a
// bf16 cache, two for fp32: the element type is a template parameter that
// only changes the loads and their unpacking); a warp thus
// covers 32 / (head_dim / 8) rows per load, and each of these lane groups
// runs its own online softmax (max, sum, unnormalized output) over the rows
// it reads, kRows rows per step so that one rescale serves several rows and
// several loads are in flight. Scores are kept in the log2 domain (q is
// pre-scaled by log2(e) / sqrt(head_dim), so exp2f does the work). At the end
// the lane groups merge through shuffles, the warps through shared memory,
// and the slice's (max, sum, output) goes to the workspace.
//
// Combine pass: one CTA per query head merges the slices that hold valid
// positions. Both passes derive the slicing from *d_pos alone, so the grid is
// fixed by max_ctx (graph capture) while the work per CTA follows the length.
#include "backends/cuda/decode_attention.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxHeads = 8;       // query heads per CTA; larger groups take several CTAs
constexpr int kMinSplitLen = 32;   // shorter slices cost more in merging than they save
constexpr int kMaxSplits = 256;    // the combine walks the slices serially
constexpr int kMaxCtasPerSm = 4;    // more slices than this buys no bandwidth, costs merging
constexpr float kLog2e = 1.4426950408889634f;

struct Params {
  const float* q;
  const void* k;  // cache rows of T (the kernels' template parameter)
  const void* v;
  const int* pos;
  int max_ctx, group, kv_dim, splits;
  float scale_log2;  // log2(e) / sqrt(head_dim)
  float* ws_acc;     // [n_heads][splits][head_dim] unnormalized outputs
  float* ws_ml;      // [n_heads][splits][2] (max in log2 units, sum of exp2)
  float* out;
};

// Positions per slice for a valid length; identical in both passes.
__device__ __forceinline__ int slice_len(int len, int splits) {
  return max((len + splits - 1) / splits, kMinSplitLen);
}

// The reference point of an online-softmax rescale by the new maximum. A side
// that has seen no position has max -inf and sum = output = 0; keeping the
// reference finite gives it weight exp2(-inf) = 0 instead of NaN.
__device__ __forceinline__ float finite_ref(float m_new) { return m_new == -INFINITY ? 0.0f : m_new; }

// Eight consecutive cache values of type T as raw bits: kLoads 16-byte loads.
template <typename T>
struct Raw8 {
  static constexpr int kLoads = sizeof(T) / 2;
  uint4 w[kLoads];
};

template <typename T>
__device__ __forceinline__ Raw8<T> load8(const uint4* p) {
  Raw8<T> r;
#pragma unroll
  for (int i = 0; i < Raw8<T>::kLoads; ++i) r.w[i] = __ldg(p + i);
  return r;
}

template <typename T>
__device__ __forceinline__ void unpack8(const Raw8<T>& r, float* f) {
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint4 w = r.w[i];
      f[4 * i] = __uint_as_float(w.x), f[4 * i + 1] = __uint_as_float(w.y);
      f[4 * i + 2] = __uint_as_float(w.z), f[4 * i + 3] = __uint_as_float(w.w);
    }
  } else {
    const uint4 w = r.w[0];
    f[0] = bf16_lo(w.x), f[1] = bf16_hi(w.x), f[2] = bf16_lo(w.y), f[3] = bf16_hi(w.y);
    f[4] = bf16_lo(w.z), f[5] = bf16_hi(w.z), f[6] = bf16_lo(w.w), f[7] = bf16_hi(w.w);
  }
}

template <typename T, int kHeadDim, int kHeads>
__global__ void __launch_bounds__(kThreads) split_kernel(const Params p) {
  constexpr int kLoads = Raw8<T>::kLoads;
  constexpr int kLanesPerRow = kHeadDim / 8;
  constexpr int kSlots = 32 / kLanesPerRow;    // rows a warp covers per load
  // Rows per lane group per step: bounded by registers, so fp32 rows, twice
  // the bits, take half as many (the same bytes in flight).
  constexpr int kRows = (kHeads >= 8 ? 2 : 4) / kLoads;
  constexpr int kWorkers = kWarps * kSlots;    // lane groups per CTA
  __shared__ float4 s_acc[kWarps][kHeads][kHeadDim / 4];
  __shared__ float s_m[kWarps][kHeads], s_l[kWarps][kHeads];

  const int pos = *p.pos;
  if (pos < 0 || pos >= p.max_ctx) return;  // the combine reports it
  const int len = pos + 1;
  const int slen = slice_len(len, p.splits);
  const int row0 = blockIdx.x * slen;
  if (row0 >= len) return;  // a slice past the valid length: nothing to do
  const int row_end = min(row0 + slen, len);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = lane % kLanesPerRow, slot = lane / kLanesPerRow;
  const int hq0 = blockIdx.z * kHeads;
  const int nh = min(kHeads, p.group - hq0);
  const int head0 = blockIdx.y * p.group + hq0;

  float qr[kHeads][8];
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    const float4* qp = reinterpret_cast<const float4*>(p.q + (head0 + g) * kHeadDim + c * 8);
    const float4 a = g < nh ? qp[0] : make_float4(0, 0, 0, 0);
    const float4 b = g < nh ? qp[1] : make_float4(0, 0, 0, 0);
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) qr[g][e] = v[e] * p.scale_log2;
  }

  const int64_t stride = p.kv_dim / 8 * kLoads;  // row stride in 16-byte groups
  const uint4* kp = static_cast<const uint4*>(p.k) + (blockIdx.y * kLanesPerRow + c) * kLoads;
  const uint4* vp = static_cast<const uint4*>(p.v) + (blockIdx.y * kLanesPerRow + c) * kLoads;
  float m[kHeads], l[kHeads], acc[kHeads][8];
#pragma unroll
  for (int g = 0; g < kHeads; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0;
  }

  // The loop bound is uniform across the warp (shuffles below need all lanes).
  for (int base = row0 + warp * kSlots; base < row_end; base += kWorkers * kRows) {
    Raw8<T> kw[kRows], vw[kRows];
    bool ok[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int row = base + r * kWorkers + slot;
      ok[r] = row < row_end;  // rows past the slice may hold anything: never read them
      kw[r] = ok[r] ? load8<T>(kp + row * stride) : Raw8<T>{};
      vw[r] = ok[r] ? load8<T>(vp + row * stride) : Raw8<T>{};
    }
    float s[kRows][kHeads];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float kf[8];
      unpack8(kw[r], kf);
#pragma unroll
      for (int g = 0; g < kHeads; ++g) {
        float d = 0;
#pragma unroll
        for (int e = 0; e < 8; ++e) d = fmaf(qr[g][e], kf[e], d);
#pragma unroll
        for (int off = kLanesPerRow / 2; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);
        s[r][g] = ok[r] ? d : -INFINITY;
      }
    }
    float vf[kRows][8];
#pragma unroll
    for (int r = 0; r < kRows; ++r) unpack8(vw[r], vf[r]);
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      float mx = s[0][g];
#pragma unroll
      for (int r = 1; r < kRows; ++r) mx = fmaxf(mx, s[r][g]);
      const float m_new = fmaxf(m[g], mx), ref = finite_ref(m_new);
      const float corr = exp2f(m[g] - ref);
      float pr[kRows], psum = 0;
#pragma unroll
      for (int r = 0; r < kRows; ++r) psum += pr[r] = exp2f(s[r][g] - ref);
      l[g] = fmaf(l[g], corr, psum);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float a = acc[g][e] * corr;
#pragma unroll
        for (int r = 0; r < kRows; ++r) a = fmaf(pr[r], vf[r][e], a);
        acc[g][e] = a;
      }
      m[g] = m_new;
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
  if (slot == 0) {
#pragma unroll
    for (int g = 0; g < kHeads; ++g) {
      s_acc[warp][g][2 * c] = make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
      s_acc[warp][g][2 * c + 1] = make_float4(acc[g][4], acc[g][5], acc[g][6], acc[g][7]);
      if (c == 0) s_m[warp][g] = m[g], s_l[warp][g] = l[g];
    }
  }
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
    const int64_t slot_index = int64_t{head0 + g} * p.splits + blockIdx.x;
    p.ws_acc[slot_index * kHeadDim + d] = o;
    if (d == 0) p.ws_ml[2 * slot_index] = mx, p.ws_ml[2 * slot_index + 1] = sum;
  }
}

// One CTA of head_dim threads per query head.
template <int kHeadDim>
__global__ void __launch_bounds__(kHeadDim) combine_kernel(const Params p) {
  const int h = blockIdx.x, d = threadIdx.x;
  const int pos = *p.pos;
  float* out = p.out + h * kHeadDim + d;
  if (pos < 0 || pos >= p.max_ctx) {
    *out = nanf("");
    return;
  }
  const int len = pos + 1;
  const int slen = slice_len(len, p.splits);
  const int active = (len + slen - 1) / slen;
  const float* ml = p.ws_ml + int64_t{h} * p.splits * 2;
  const float* acc = p.ws_acc + int64_t{h} * p.splits * kHeadDim + d;
  float mx = -INFINITY;
  for (int i = 0; i < active; ++i) mx = fmaxf(mx, ml[2 * i]);
  float o = 0, sum = 0;
  for (int i = 0; i < active; ++i) {
    const float wt = exp2f(ml[2 * i] - mx);
    sum += wt * ml[2 * i + 1];
    o += wt * acc[int64_t{i} * kHeadDim];
  }
  *out = o / sum;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

using KernelFn = void (*)(Params);

struct Variant {
  KernelFn split, combine;
};

template <typename T>
Variant variant_for(const HeadShape& shape) {
  const int group = shape.n_heads / shape.n_kv_heads;
  const int heads = group >= kMaxHeads ? kMaxHeads : group > 2 ? 4 : group;  // per CTA
  const int pick = heads == 1 ? 0 : heads == 2 ? 1 : heads == 4 ? 2 : 3;
  if (shape.head_dim == 64) {
    const KernelFn split[] = {split_kernel<T, 64, 1>, split_kernel<T, 64, 2>, split_kernel<T, 64, 4>,
                              split_kernel<T, 64, kMaxHeads>};
    return {split[pick], combine_kernel<64>};
  }
  const KernelFn split[] = {split_kernel<T, 128, 1>, split_kernel<T, 128, 2>, split_kernel<T, 128, 4>,
                            split_kernel<T, 128, kMaxHeads>};
  return {split[pick], combine_kernel<128>};
}

Variant variant_for(const HeadShape& shape, ElementType cache_type) {
  return cache_type == ElementType::F32 ? variant_for<float>(shape) : variant_for<__nv_bfloat16>(shape);
}

}  // namespace

DecodeAttentionPlan plan_decode_attention(const HeadShape& shape, int max_ctx, ElementType cache_type) {
  const char* where = "plan_decode_attention";
  check_head_shape(shape, where);
  check(max_ctx >= 1, where, "max_ctx ", max_ctx, " must be positive");
  int device = 0, sm_count = 0, resident = 0;
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  FSVD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &resident, variant_for(shape, cache_type).split, kThreads, 0));
  const int group = shape.n_heads / shape.n_kv_heads;
  DecodeAttentionPlan plan;
  plan.head_chunks = static_cast<int>(ceil_div(group, kMaxHeads));
  // As many slices as fill one wave of resident CTAs: a second, partial wave
  // would cost as long as the first (measured: 528 CTAs where 396 fit ran at
  // 1.2 TB/s on H200).
  const int64_t ctas_per_split = int64_t{shape.n_kv_heads} * plan.head_chunks;
  const int64_t slots = int64_t{std::clamp(resident, 1, kMaxCtasPerSm)} * sm_count;
  plan.splits = static_cast<int>(std::clamp<int64_t>(
      slots / ctas_per_split, 1, std::min<int64_t>(kMaxSplits, ceil_div(max_ctx, kMinSplitLen))));
  plan.workspace_floats = size_t(shape.n_heads) * plan.splits * (shape.head_dim + 2);
  return plan;
}

void decode_attention(const float* q, const KvCacheLayer& cache, const int* d_pos,
                      const HeadShape& shape, float* workspace, size_t workspace_floats, float* out,
                      cudaStream_t stream) {
  const char* where = "decode_attention";
  check_head_shape(shape, where);
  check_cache(cache, where);
  check(q != nullptr && d_pos != nullptr && workspace != nullptr && out != nullptr, where,
        "null argument");
  check(reinterpret_cast<uintptr_t>(q) % 16 == 0, where, "q must be 16-byte aligned");
  const DecodeAttentionPlan plan = plan_decode_attention(shape, cache.max_ctx, cache.type);
  check(workspace_floats >= plan.workspace_floats, where, "workspace of ", workspace_floats,
        " floats; this shape needs ", plan.workspace_floats);

  Params p{};
  p.q = q;
  p.k = cache.k;
  p.v = cache.v;
  p.pos = d_pos;
  p.max_ctx = cache.max_ctx;
  p.group = shape.n_heads / shape.n_kv_heads;
  p.kv_dim = shape.n_kv_heads * shape.head_dim;
  p.splits = plan.splits;
  p.scale_log2 = kLog2e / std::sqrt(static_cast<float>(shape.head_dim));
  p.ws_acc = workspace;
  p.ws_ml = workspace + size_t(shape.n_heads) * plan.splits * shape.head_dim;
  p.out = out;
  const Variant kernels = variant_for(shape, cache.type);
  kernels.split<<<dim3(plan.splits, shape.n_kv_heads, plan.head_chunks), kThreads, 0, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("decode attention split_kernel");
  kernels.combine<<<shape.n_heads, shape.head_dim, 0, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("decode attention combine_kernel");
}

}  // namespace fsvd::cuda
