// Token sampling on the GPU (see sampling.h). One launch, one cluster per row:
// its CTAs each hold a slice of the logits row in shared memory and share
// partial results through distributed shared memory, so the row is read from
// L2 once and no pass needs another launch or a host decision. A greedy row
// only takes the cluster's argmax; a padding row leaves at once.
//
// Steps of a sampled row: the max; top-k and then top-p cut-offs, each a radix
// select on an order key (smaller key = more probable) of at most three 11-bit
// passes that stops early once the cut falls between bins; the draw, a scan of
// the kept weights. Weights are summed in 64-bit fixed point, so every CTA derives the
// same cut from the same integers and the result does not depend on timing.
#include "backends/cuda/sampling.h"

#include <cooperative_groups.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/reduce.cuh"

namespace fsvd::cuda {
namespace {

namespace cg = cooperative_groups;
using u64 = unsigned long long;

constexpr int kCtas = 8;  // the portable cluster size
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBinBits = 11;
constexpr int kBins = 1 << kBinBits;
constexpr int kFirstShift = 32 - kBinBits;  // the first pass bins the whole key range
constexpr u64 kAllKeys = u64{1} << 32;
// Weight 1 is 2^44, so the weights of up to 2^19 tokens sum below 2^63.
constexpr float kFixedOne = 17592186044416.0f;  // 2^44
constexpr int kMaxSlice = static_cast<int>(kMaxSamplingVocab / kCtas);
static_assert(kWarps == 32, "a warp scans one value a lane");
static_assert(kMaxSamplingVocab <= (int64_t{1} << 19) && kMaxSamplingVocab % kCtas == 0);

struct Params {
  const float* logits;
  int64_t ld;         // row stride
  int n;
  int slice;          // logits per CTA
  const SamplingParams* params;
  const int32_t* step;
  int32_t* token;
  uint8_t* kept;      // optional, [rows, n]
};

// What the passes use of a sampled row's SamplingParams.
struct Config {
  float scale;       // log2(e) / temperature
  int top_k;         // 0: off
  float top_p;       // 1: off
  float min_weight;  // (1 - top_p) / 2n: the nucleus never needs a lighter token
};
// In double, rounded once: correctly rounded, so the bits depend on the
// parameters alone (not on how a compiler contracts or orders float steps).
__device__ Config row_config(const SamplingParams& c, int n) {
  return Config{static_cast<float>(1.4426950408889634 / c.temperature),  // may overflow to inf
                c.top_k < n ? c.top_k : 0, c.top_p,
                static_cast<float>((1.0 - c.top_p) / (2.0 * static_cast<double>(n)))};
}

// Smaller for higher logits; a bijection on keys, so equal logits share a key.
__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? u : ~u & 0x7fffffffu;
}
__device__ __forceinline__ float key_logit(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? k : ~k & 0x7fffffffu);
}

// exp((v - max) / T) in fixed point; the max weighs exactly 1 even when 1/T overflows.
__device__ __forceinline__ u64 fixed_weight(float v, float max, float scale) {
  const float w = v == max ? 1.0f : exp2f((v - max) * scale);
  return __float2ull_rn(w * kFixedOne);
}

// SplitMix64's finalizer.
__device__ __forceinline__ u64 mix64(u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Uniform in [0, total): counter-based, so a step's draw needs no state.
__device__ __forceinline__ u64 draw_below(u64 total, uint64_t seed, int32_t step) {
  const u64 counter = u64{static_cast<uint32_t>(step)} + 1;
  return __umul64hi(mix64(mix64(seed) + counter * 0x9e3779b97f4a7c15ull), total);
}

// Bin where a running count or mass reaches what a cut needs.
struct Found {
  int ok;
  uint32_t bin, count;
  u64 before, mass;  // measure of the earlier bins; mass of this one
  u64 need;          // what the cut needed (top-p's first pass derives it)
  u64 binned;        // measure of all bins
};

// The kept set: keys below `strict`, and at key `tie` the ties_kept lowest ids of tie_count.
struct Cut {
  u64 strict;
  uint32_t tie, ties_kept, tie_count;
};

// One CTA's histogram. Masses are 64-bit sums kept as two words, since the
// shared-memory atomic add is native for 32 bits only. The cluster reads the
// chunk totals first and then one chunk's bins, so each pass moves a few KB
// between CTAs rather than every histogram to every CTA.
constexpr int kChunks = 32, kChunkBins = kBins / kChunks;
struct Histogram {
  uint32_t count[kBins], mass_lo[kBins], mass_hi[kBins];
  uint32_t chunk_count[kChunks];
  u64 chunk_mass[kChunks];
  uint32_t total_lo, total_hi;  // weight of every token below the limit (top-p's first pass)
};
static_assert(kChunks == kWarps && kChunkBins == 64, "warp w totals chunk w; a lane reads two bins");
constexpr size_t kHistogramBytes = (sizeof(Histogram) + 15) / 16 * 16;
static_assert(2 * kHistogramBytes + kMaxSlice * sizeof(float) + 2048 <= 227 * 1024,
              "the row slice, histograms and statics must fit one SM's shared memory");

struct Shared {
  Best parts[kCtas];  // every CTA's best, written by that CTA
  u64 kept_part;      // per CTA, read by the whole cluster
  uint32_t tie_part;
  u64 kept_total, kept_before;
  uint32_t ties_before;
  Found found;
  Best best_scratch[kWarps];
  u64 scan[kWarps + 1];
  uint32_t warp_ties[kWarps];
};

// This CTA's logits and what turns them into weights.
struct Row {
  float* x;
  int len;
  float max, scale;
};

__device__ __forceinline__ u64 warp_inclusive_scan(u64 v) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const u64 o = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += o;
  }
  return v;
}

// Exclusive prefix of v over the CTA's threads in order; *total gets the sum.
__device__ u64 block_exclusive_scan(u64 v, u64* total, u64* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const u64 incl = warp_inclusive_scan(v);
  if (lane == 31) scratch[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const u64 s = scratch[lane], si = warp_inclusive_scan(s);
    scratch[lane] = si - s;
    if (lane == 31) scratch[kWarps] = si;
  }
  __syncthreads();
  const u64 excl = scratch[warp] + incl - v;
  *total = scratch[kWarps];
  __syncthreads();  // scratch is free again
  return excl;
}

// 64-bit add as two native 32-bit atomics: the low word's old value tells
// whether this add carried, so the sum is exact whatever the order.
__device__ __forceinline__ void add_mass(uint32_t* lo, uint32_t* hi, u64 w) {
  const uint32_t wl = static_cast<uint32_t>(w), old = atomicAdd(lo, wl);
  const uint32_t carry_in = static_cast<uint32_t>(w >> 32) + (old + wl < old ? 1u : 0u);
  if (carry_in != 0) atomicAdd(hi, carry_in);
}
__device__ __forceinline__ u64 join(uint32_t lo, uint32_t hi) { return u64{hi} << 32 | lo; }

// Counts (and with_mass, weighs) this CTA's tokens of key in [lo, lo + kBins << shift)
// below bin_end into bins of 2^shift keys, then totals each chunk. With
// want_total, also sums the weight of all tokens below `limit`. The caller
// syncs the cluster next.
__device__ void fill_histogram(const Row& row, u64 lo, int shift, u64 limit, u64 bin_end,
                               bool with_mass, bool want_total, Histogram& h) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  for (int b = t; b < kBins; b += kThreads) h.count[b] = h.mass_lo[b] = h.mass_hi[b] = 0;
  if (t == 0) h.total_lo = h.total_hi = 0;
  __syncthreads();
  const u64 span = u64{kBins} << shift;
  u64 total = 0;
  for (int i = t; i < row.len; i += kThreads) {
    const float v = row.x[i];
    const uint32_t k = order_key(v);
    if (k >= limit) continue;
    const bool in = k >= lo && k - lo < span && k < bin_end;
    if (!in && !want_total) continue;
    const u64 w = with_mass ? fixed_weight(v, row.max, row.scale) : 0;
    total += w;
    if (!in) continue;
    const uint32_t bin = static_cast<uint32_t>((k - lo) >> shift);
    atomicAdd(&h.count[bin], 1u);
    if (w != 0) add_mass(&h.mass_lo[bin], &h.mass_hi[bin], w);
  }
  if (want_total) {
    total = warp_sum(total);
    if (lane == 0 && total != 0) add_mass(&h.total_lo, &h.total_hi, total);
  }
  __syncthreads();
  const int b0 = warp * kChunkBins + lane, b1 = b0 + 32;  // warp w totals chunk w
  const uint32_t c = warp_sum(h.count[b0] + h.count[b1]);
  const u64 m = warp_sum(join(h.mass_lo[b0], h.mass_hi[b0]) + join(h.mass_lo[b1], h.mass_hi[b1]));
  if (lane == 0) h.chunk_count[warp] = c, h.chunk_mass[warp] = m;
}

// What a pass looks for: the first bin at which the running count (or mass)
// reaches `need`. Top-p's first pass derives need = ceil(top_p * total) from the
// cluster's weight below the limit plus `extra` (the top-k cut's kept ties).
struct Query {
  bool with_mass;
  u64 need;
  bool from_total;
  float top_p;
  u64 extra;
};

// After a cluster sync: warp 0 sums the cluster's chunk totals, finds the chunk,
// then that chunk's bins; the answer is broadcast through shared memory.
__device__ Found find_bin(const cg::cluster_group& cluster, const Histogram& h, const Query& q,
                          Shared& sh) {
  const int lane = threadIdx.x % 32;
  if (threadIdx.x < 32) {
    uint32_t cc = 0;
    u64 cm = 0, all = 0;
    for (int r = 0; r < kCtas; ++r) {
      const Histogram& rh = *cluster.map_shared_rank(&h, r);
      cc += rh.chunk_count[lane];
      if (q.with_mass) cm += rh.chunk_mass[lane];
      if (q.from_total && lane == r) all = join(rh.total_lo, rh.total_hi);
    }
    const u64 need = q.from_total ? static_cast<u64>(ceil(static_cast<double>(q.top_p) *
                                                          static_cast<double>(warp_sum(all) + q.extra)))
                                  : q.need;
    const u64 v = q.with_mass ? cm : cc, incl = warp_inclusive_scan(v);
    const u64 binned = __shfl_sync(0xffffffffu, incl, 31);
    const unsigned reached = __ballot_sync(0xffffffffu, incl >= need);
    if (reached == 0) {
      if (lane == 0) sh.found = Found{0, 0, 0, 0, 0, need, binned};
    } else {
      const int chunk = __ffs(reached) - 1;
      const u64 chunk_before = __shfl_sync(0xffffffffu, incl - v, chunk);
      const int b = chunk * kChunkBins + 2 * lane;  // two consecutive bins a lane
      uint32_t c0 = 0, c1 = 0;
      u64 m0 = 0, m1 = 0;
      for (int r = 0; r < kCtas; ++r) {
        const Histogram& rh = *cluster.map_shared_rank(&h, r);
        const uint2 c = *reinterpret_cast<const uint2*>(&rh.count[b]);
        c0 += c.x, c1 += c.y;
        if (q.with_mass) {
          const uint2 lo = *reinterpret_cast<const uint2*>(&rh.mass_lo[b]);
          const uint2 hi = *reinterpret_cast<const uint2*>(&rh.mass_hi[b]);
          m0 += join(lo.x, hi.x), m1 += join(lo.y, hi.y);
        }
      }
      const u64 v0 = q.with_mass ? m0 : c0, v1 = q.with_mass ? m1 : c1;
      const u64 through = chunk_before + warp_inclusive_scan(v0 + v1);  // up to this lane's pair
      const int l = __ffs(__ballot_sync(0xffffffffu, through >= need)) - 1;
      if (lane == l) {
        const u64 before = through - v0 - v1;
        sh.found = need <= before + v0 ? Found{1, static_cast<uint32_t>(b), c0, before, m0, need, binned}
                                       : Found{1, static_cast<uint32_t>(b + 1), c1, before + v0, m1, need, binned};
      }
    }
  }
  __syncthreads();
  return sh.found;
}

// The top-k cut (k < n) by count.
__device__ Cut top_k_cut(const cg::cluster_group& cluster, const Row& row, int k,
                         Histogram* histograms, int& buf, Shared& sh) {
  u64 lo = 0, above = 0;
  for (int shift = kFirstShift;; shift = max(shift - kBinBits, 0)) {
    Histogram& h = histograms[buf];
    buf ^= 1;
    fill_histogram(row, lo, shift, kAllKeys, kAllKeys, false, false, h);
    cluster.sync();
    const Found f = find_bin(cluster, h, Query{false, k - above, false, 0.0f, 0}, sh);
    const u64 bin_lo = lo + (u64{f.bin} << shift);
    const u64 need = k - above - f.before;
    if (need == f.count) return Cut{bin_lo + (u64{1} << shift), 0, 0, 0};
    if (shift == 0) return Cut{bin_lo, static_cast<uint32_t>(bin_lo), static_cast<uint32_t>(need), f.count};
    lo = bin_lo;
    above += f.before;
  }
}

// Narrows `cut` (the top-k set, or everything) to its top-p nucleus, by mass.
__device__ Cut top_p_cut(const cg::cluster_group& cluster, const Row& row, float top_p,
                         float min_weight, Cut cut, Histogram* histograms, int& buf, Shared& sh) {
  // Tokens lighter than min_weight weigh less than (1 - top_p) of any top-k set
  // together, so the nucleus ends before them: bin only the keys up to the first
  // bin edge past that weight (binning every light token would crowd a few bins).
  const float light = row.max + log2f(min_weight) / row.scale;
  const u64 heavy_end = min(cut.strict, u64{(order_key(light) >> kFirstShift) + 1} << kFirstShift);
  const u64 tie_weight = cut.ties_kept ? fixed_weight(key_logit(cut.tie), row.max, row.scale) : 0;
  u64 lo = 0, above = 0, target = 0;
  for (int shift = kFirstShift;; shift = max(shift - kBinBits, 0)) {
    const bool first = shift == kFirstShift;
    Histogram& h = histograms[buf];
    buf ^= 1;
    fill_histogram(row, lo, shift, cut.strict, heavy_end, true, first, h);
    cluster.sync();
    const Found f = find_bin(
        cluster, h, Query{true, target - above, first, top_p, tie_weight * cut.ties_kept}, sh);
    if (first) target = f.need;
    if (!f.ok) {  // (first pass only) the nucleus ends among the top-k cut's ties
      if (tie_weight > 0) {
        const u64 r = (target - f.binned + tie_weight - 1) / tie_weight;
        cut.ties_kept = static_cast<uint32_t>(max(u64{1}, min(r, u64{cut.ties_kept})));
      }
      return cut;
    }
    const u64 bin_lo = lo + (u64{f.bin} << shift);
    if (f.count == 1) return Cut{min(bin_lo + (u64{1} << shift), heavy_end), 0, 0, 0};
    if (shift == 0) {  // one key: equal weights, so count how many reach the target
      const u64 w = f.mass / f.count, need = target - above - f.before;
      const u64 r = max(u64{1}, min((need + w - 1) / w, u64{f.count}));
      return Cut{bin_lo, static_cast<uint32_t>(bin_lo), static_cast<uint32_t>(r), f.count};
    }
    lo = bin_lo;
    above += f.before;
  }
}

// Marks the tied tokens past the first ties_kept (by id) NaN, which nothing keeps.
__device__ void drop_extra_ties(const cg::cluster_group& cluster, const Row& row, const Cut& cut,
                                Shared& sh) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  u64 mine = 0, sum;
  for (int i = t; i < row.len; i += kThreads) mine += order_key(row.x[i]) == cut.tie;
  block_exclusive_scan(mine, &sum, sh.scan);
  if (t == 0) sh.tie_part = static_cast<uint32_t>(sum);
  cluster.sync();
  if (warp == 0) {  // ties in the CTAs of lower ids
    const u64 part = lane < static_cast<int>(cluster.block_rank()) ? *cluster.map_shared_rank(&sh.tie_part, lane) : 0;
    const u64 before = warp_sum(part);
    if (lane == 0) sh.ties_before = static_cast<uint32_t>(before);
  }
  __syncthreads();
  uint32_t seen = sh.ties_before;
  for (int base = 0; base < row.len; base += kThreads) {  // ids in order, kThreads at a time
    const int i = base + t;
    const bool tie = i < row.len && order_key(row.x[i]) == cut.tie;
    const unsigned ballot = __ballot_sync(0xffffffffu, tie);
    if (lane == 0) sh.warp_ties[warp] = __popc(ballot);
    __syncthreads();
    uint32_t lower = 0, all = 0;
    for (int w = 0; w < kWarps; ++w) {
      all += sh.warp_ties[w];
      if (w < warp) lower += sh.warp_ties[w];
    }
    if (tie && seen + lower + __popc(ballot & ((1u << lane) - 1)) >= cut.ties_kept) row.x[i] = NAN;
    __syncthreads();
    seen += all;
  }
}

__device__ __forceinline__ bool is_kept(float v, const Cut& cut) {
  const uint32_t k = order_key(v);
  return !isnan(v) && (k < cut.strict || (cut.ties_kept > 0 && k == cut.tie));
}

// The row's best (largest value, lowest index on ties) from each thread's `b`.
// Each CTA pushes its block's best into every CTA's shared memory, so after
// one cluster barrier every CTA reads them all locally: a CTA that leaves right
// after (greedy and non-finite rows) leaves nothing another still reads. The
// wait completes the kernel's first arrive: every CTA has started, so its
// shared memory may be written.
__device__ Best cluster_best(const cg::cluster_group& cluster, Best b, Shared& sh) {
  b = block_best<kWarps>(b, sh.best_scratch);
  cluster.barrier_wait();
  if (threadIdx.x == 0)
    for (int r = 0; r < kCtas; ++r) cluster.map_shared_rank(sh.parts, r)[cluster.block_rank()] = b;
  cluster.sync();
  Best top = sh.parts[0];
  for (int r = 1; r < kCtas; ++r) top = better(top, sh.parts[r]);
  return top;
}

// Ends a row whose token is `index` (its argmax): the kept set is that token alone.
__device__ void pick(int index, int rank, int32_t* token, uint8_t* kept_out, int begin, int len) {
  if (rank == 0 && threadIdx.x == 0) *token = index;
  if (kept_out)
    for (int i = threadIdx.x; i < len; i += kThreads) kept_out[i] = begin + i == index;
}

// One cluster per row: blockIdx.y is the row.
__global__ void __cluster_dims__(kCtas, 1, 1) __launch_bounds__(kThreads, 1) sample_kernel(const Params p) {
  const int r = blockIdx.y;
  const SamplingParams c = p.params[r];  // loaded alongside the step, not after it
  const int32_t step = p.step[r];
  if (step < 0) return;  // padding: the whole cluster leaves before any barrier
  const cg::cluster_group cluster = cg::this_cluster();
  __cluster_barrier_arrive_relaxed();  // this CTA has started (cluster_best waits)
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  Histogram* histograms = reinterpret_cast<Histogram*>(dynamic_smem);  // two, alternating by pass
  float* x = reinterpret_cast<float*>(dynamic_smem + 2 * kHistogramBytes);  // this CTA's slice
  __shared__ Shared sh;

  const int t = threadIdx.x, lane = t % 32, rank = static_cast<int>(cluster.block_rank());
  const int begin = rank * p.slice, len = max(0, min(p.n - begin, p.slice));
  const float* logits = p.logits + r * p.ld + begin;  // this CTA's slice
  int32_t* token = p.token + r;
  uint8_t* kept_out = p.kept ? p.kept + int64_t{r} * p.n + begin : nullptr;

  if (!(c.temperature > 0)) {  // greedy: the argmax of the raw values
    const Best top = cluster_best(cluster, range_best<kThreads>(logits, len, begin), sh);
    pick(top.i == INT_MAX ? 0 : top.i, rank, token, kept_out, begin, len);  // all NaN gives 0
    return;
  }

  // NaN ranks as -inf, and -0 as +0 so that equal logits get equal keys.
  Best best{-INFINITY, INT_MAX};
  for (int i = t; i < len; i += kThreads) {
    const float raw = logits[i];
    const float v = isnan(raw) ? -INFINITY : raw + 0.0f;
    x[i] = v;
    best = better(best, {v, begin + i});
  }
  const Best top = cluster_best(cluster, best, sh);
  if (!isfinite(top.v)) {  // the CPU sampler throws here; a kernel takes the argmax
    pick(top.i, rank, token, kept_out, begin, len);
    return;
  }

  const Config config = row_config(c, p.n);
  const Row row{x, len, top.v, config.scale};
  Cut cut{kAllKeys, 0, 0, 0};
  int buf = 0;
  if (config.top_k > 0) cut = top_k_cut(cluster, row, config.top_k, histograms, buf, sh);
  if (config.top_p < 1.0f)
    cut = top_p_cut(cluster, row, config.top_p, config.min_weight, cut, histograms, buf, sh);
  if (cut.ties_kept > 0 && cut.ties_kept < cut.tie_count) drop_extra_ties(cluster, row, cut, sh);

  // Draw: the thread whose share of the kept mass holds u walks its tokens.
  u64 mine = 0;
  for (int i = t; i < len; i += kThreads) {
    const bool kept = is_kept(x[i], cut);
    if (kept) mine += fixed_weight(x[i], row.max, row.scale);
    if (kept_out) kept_out[i] = kept;
  }
  u64 cta_total;
  const u64 before = block_exclusive_scan(mine, &cta_total, sh.scan);
  if (t == 0) sh.kept_part = cta_total;
  cluster.sync();
  if (t < 32) {
    const u64 part = lane < kCtas ? *cluster.map_shared_rank(&sh.kept_part, lane) : 0;
    const u64 incl = warp_inclusive_scan(part);
    const u64 total = __shfl_sync(0xffffffffu, incl, 31), cta_before = __shfl_sync(0xffffffffu, incl - part, rank);
    if (lane == 0) sh.kept_total = total, sh.kept_before = cta_before;
  }
  __syncthreads();
  const u64 total = sh.kept_total, cta_before = sh.kept_before;
  const u64 u = draw_below(total, c.seed, step);
  if (u >= cta_before && u - cta_before >= before && u - cta_before < before + mine) {
    u64 acc = cta_before + before;
    for (int i = t; i < len; i += kThreads) {
      if (!is_kept(x[i], cut)) continue;
      acc += fixed_weight(x[i], row.max, row.scale);
      if (u < acc) {
        *token = begin + i;
        break;
      }
    }
  }
  if (total == 0 && rank == 0 && t == 0) *token = top.i;  // unreachable: the max weighs 1
  cluster.sync();  // no CTA leaves while others may read its shared memory
}

}  // namespace

void sample_tokens(const float* logits, int rows, int64_t n, int64_t ld, const SamplingParams* d_params,
                   const int32_t* d_step, int32_t* d_token, cudaStream_t stream, uint8_t* d_kept) {
  const char* where = "cuda::sample_tokens";
  check(logits != nullptr && d_params != nullptr && d_step != nullptr && d_token != nullptr, where,
        "null argument");
  check(reinterpret_cast<uintptr_t>(logits) % alignof(float) == 0, where, "misaligned logits");
  check(rows >= 1 && rows <= kMaxSamplingRows, where, rows, " rows (1 to ", kMaxSamplingRows, " allowed)");
  check(n >= 1 && n <= kMaxSamplingVocab, where, n, " logits (1 to ", kMaxSamplingVocab, " allowed)");
  check(ld >= n, where, "row stride ", ld, " below the ", n, " logits of a row");
  const Params p{logits, ld, static_cast<int>(n), static_cast<int>((n + kCtas - 1) / kCtas), d_params, d_step,
                 d_token, d_kept};
  const size_t smem = 2 * kHistogramBytes + static_cast<size_t>(p.slice) * sizeof(float);
  FSVD_CUDA_CHECK(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem)));
  sample_kernel<<<dim3(kCtas, rows), kThreads, smem, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("sample_kernel");
}

}  // namespace fsvd::cuda
