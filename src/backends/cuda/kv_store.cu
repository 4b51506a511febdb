// The KV-cache row stores (see kv_store.h).
//
// rope_store_kv_rows: one thread per (token, 4 rotation pairs), 16-byte
// loads (one pair a thread where rows are not 16-byte aligned). The angles
// are computed once and serve every q and kv head of the token; the
// rotation is decode attention's (rope.cuh), so the cache rows match decode
// bitwise.
//
// store_row_bf16: the loop shape of row_runs.cuh over one row.
#include "backends/cuda/kv_store.h"

#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/rope.cuh"
#include "backends/cuda/row_runs.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kRopeThreads = 256;

struct RopeParams {
  const float* q;
  const float* k;
  const float* v;
  const float* inv_freq;
  int64_t ldq, ldk, ldv;
  __nv_bfloat16* q_out;
  __nv_bfloat16* k_cache;
  __nv_bfloat16* v_cache;
  int pos, n, n_heads, n_kv_heads, head_dim;
};

// kVec consecutive fp32 values: one 16-byte load when kVec is 4.
template <int kVec>
__device__ __forceinline__ void load_floats(const float* p, float (&x)[kVec]) {
  if constexpr (kVec == 4) {
    const float4 f = *reinterpret_cast<const float4*>(p);
    x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
  } else {
    x[0] = *p;
  }
}

template <int kVec>
__device__ __forceinline__ void store_bf16(__nv_bfloat16* p, const float (&x)[kVec]) {
  if constexpr (kVec == 4) {
    *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16(x[0], x[1]), pack_bf16(x[2], x[3]));
  } else {
    *p = __float2bfloat16_rn(x[0]);
  }
}

// Rotates the pairs (j0 + e, j0 + e + half), e < kVec, of one head and stores
// them as bf16, rounded as decode attention rotates (rope.cuh).
template <int kVec>
__device__ __forceinline__ void rotate_store(const float* x, __nv_bfloat16* out, int half,
                                             const float (&s)[kVec], const float (&c)[kVec]) {
  float a[kVec], b[kVec], ra[kVec], rb[kVec];
  load_floats(x, a);
  load_floats(x + half, b);
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    ra[e] = rope_first(a[e], b[e], s[e], c[e]);
    rb[e] = rope_second(a[e], b[e], s[e], c[e]);
  }
  store_bf16(out, ra);
  store_bf16(out + half, rb);
}

// One thread per (token, kVec consecutive rotation pairs, head): blockIdx.y
// is the head, q heads first, then kv heads (k rotated, v copied). A thread
// per token looping over its heads left short prompts with too few threads
// to cover memory latency (bench/kernels/prefill_attention_notes.md).
template <int kVec>
__global__ void __launch_bounds__(kRopeThreads) rope_store_kv_rows_kernel(const RopeParams p) {
  const int half = p.head_dim / 2, groups = half / kVec;
  const int64_t t = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (t >= int64_t{p.n} * groups) return;
  const int i = static_cast<int>(t / groups), j0 = static_cast<int>(t % groups) * kVec;
  const int pos = p.pos + i;
  float s[kVec], c[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) rope_angle(pos, p.inv_freq[j0 + e], &s[e], &c[e]);
  const int h = blockIdx.y + (p.q ? 0 : p.n_heads);  // without q, the grid covers the kv heads only
  if (h < p.n_heads) {
    const int64_t e = int64_t{h} * p.head_dim + j0;
    rotate_store(p.q + i * p.ldq + e, p.q_out + int64_t{i} * p.n_heads * p.head_dim + e, half, s, c);
    return;
  }
  const int64_t e = int64_t{h - p.n_heads} * p.head_dim + j0;
  const int64_t row = int64_t{pos} * p.n_kv_heads * p.head_dim + e;
  rotate_store(p.k + i * p.ldk + e, p.k_cache + row, half, s, c);
  if (!p.v) return;  // the v rows are already in the cache
  float x[kVec];
  const float* v = p.v + i * p.ldv + e;
  load_floats(v, x);
  store_bf16(p.v_cache + row, x);
  load_floats(v + half, x);
  store_bf16(p.v_cache + row + half, x);
}

using namespace row_runs;

__global__ void store_row_bf16_kernel(const float* x, int64_t cols, const int* d_pos, int max_rows,
                                      __nv_bfloat16* rows, int64_t ld) {
  const int pos = *d_pos;
  if (pos < 0 || pos >= max_rows) return;
  for_each_run(1, cols, [&](int64_t, int64_t c0, int n) {
    float v[kRun];
    load_run(x + c0, n, v);
    store_run(rows + pos * ld + c0, n, v);
  });
}

}  // namespace

void rope_store_kv_rows(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, const float* inv_freq, int pos, int n, const HeadShape& shape,
                        const KvCacheLayer& cache, __nv_bfloat16* q_out, cudaStream_t stream) {
  const char* where = "rope_store_kv_rows";
  check_head_shape(shape, where);
  check_cache_rows(pos, n, cache, where);
  check(k != nullptr && inv_freq != nullptr && (q == nullptr) == (q_out == nullptr), where, "null argument");
  const int64_t q_dim = int64_t{shape.n_heads} * shape.head_dim;
  const int64_t kv_dim = int64_t{shape.n_kv_heads} * shape.head_dim;
  check((q == nullptr || ldq >= q_dim) && ldk >= kv_dim && (v == nullptr || ldv >= kv_dim), where, "row strides ", ldq, ", ", ldk, ", ",
        ldv, " are shorter than the rows (", q_dim, ", ", kv_dim, ")");
  const RopeParams p{q,
                     k,
                     v,
                     inv_freq,
                     ldq,
                     ldk,
                     ldv,
                     q_out,
                     static_cast<__nv_bfloat16*>(cache.k),
                     static_cast<__nv_bfloat16*>(cache.v),
                     pos,
                     n,
                     shape.n_heads,
                     shape.n_kv_heads,
                     shape.head_dim};
  // 16-byte loads need 16-byte aligned rows; q_out takes 8-byte stores.
  const auto aligned = [](const void* ptr, int bytes) {
    return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
  };
  const bool vec4 = aligned(q, 16) && aligned(k, 16) && aligned(v, 16) && aligned(q_out, 8) &&
                    ldq % 4 == 0 && ldk % 4 == 0 && ldv % 4 == 0;
  const int64_t work = int64_t{n} * (shape.head_dim / 2) / (vec4 ? 4 : 1);
  const dim3 grid(static_cast<unsigned>((work + kRopeThreads - 1) / kRopeThreads),
                  static_cast<unsigned>((q ? shape.n_heads : 0) + shape.n_kv_heads));
  if (vec4)
    rope_store_kv_rows_kernel<4><<<grid, kRopeThreads, 0, stream>>>(p);
  else
    rope_store_kv_rows_kernel<1><<<grid, kRopeThreads, 0, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("rope_store_kv_rows_kernel");
}

void store_row_bf16(const float* x, int64_t cols, const int* d_pos, int max_rows, __nv_bfloat16* rows, int64_t ld,
                    cudaStream_t stream) {
  check(x != nullptr && d_pos != nullptr && rows != nullptr && cols >= 1 && ld >= cols && max_rows >= 1,
        "store_row_bf16", "bad arguments: cols ", cols, ", ld ", ld, ", max_rows ", max_rows);
  store_row_bf16_kernel<<<grid_for(1, cols), kThreads, 0, stream>>>(x, cols, d_pos, max_rows, rows, ld);
  FSVD_CUDA_CHECK_LAUNCH("store_row_bf16_kernel");
}

}  // namespace fsvd::cuda
