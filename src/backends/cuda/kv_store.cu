// The KV-cache row stores (see kv_store.h).
//
// rope_store_kv_rows: one thread per (row, 4 rotation pairs, head), 16-byte
// loads (one pair a thread where rows are not 16-byte aligned); a row's slot
// through its sequence's block table (block sizes are powers of two: a shift
// and a mask). The rotation is decode attention's (rope.cuh), so the cache
// rows match decode bitwise.
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
  QkvRows qkv;
  const float* inv_freq;
  __nv_bfloat16* q_out;
  void* k_cache;  // pool rows of T (the kernel's template parameter)
  void* v_cache;
  PagedRows rows;
  int block_shift;  // log2(block_size)
  int64_t reach;    // table_reach: positions past it have no slot
  int n, n_heads, n_kv_heads, head_dim;
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

// kVec values stored as T (bf16, fp8: rounded to nearest even), in one store.
template <typename T, int kVec>
__device__ __forceinline__ void store_as(T* p, const float (&x)[kVec]) {
  if constexpr (kVec == 4 && sizeof(T) == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
  } else if constexpr (kVec == 4 && sizeof(T) == 2) {
    *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16(x[0], x[1]), pack_bf16(x[2], x[3]));
  } else if constexpr (kVec == 4) {
    *reinterpret_cast<uint32_t*>(p) = pack_e4m3x4(x[0], x[1], x[2], x[3]);
  } else if constexpr (sizeof(T) == 4) {
    *p = x[0];
  } else if constexpr (sizeof(T) == 2) {
    *p = __float2bfloat16_rn(x[0]);
  } else {
    *p = __nv_fp8_e4m3(x[0]);  // satfinite, nearest even
  }
}

// Rotates the pairs (j0 + e, j0 + e + half), e < kVec, of one head and stores
// them as T, rounded as decode attention rotates (rope.cuh).
template <typename T, int kVec>
__device__ __forceinline__ void rotate_store(const float* x, T* out, int half, const float (&s)[kVec],
                                             const float (&c)[kVec]) {
  float a[kVec], b[kVec], ra[kVec], rb[kVec];
  load_floats(x, a);
  load_floats(x + half, b);
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    ra[e] = rope_first(a[e], b[e], s[e], c[e]);
    rb[e] = rope_second(a[e], b[e], s[e], c[e]);
  }
  store_as(out, ra);
  store_as(out + half, rb);
}

// One thread per (row, kVec consecutive rotation pairs, head): blockIdx.y is
// the head, q heads first, then kv heads (k rotated, v copied). A thread per
// row looping over its heads left short prompts with too few threads to
// cover memory latency (bench/kernels/prefill_attention_notes.md).
template <typename T, int kVec>
__global__ void __launch_bounds__(kRopeThreads) rope_store_kv_rows_kernel(const RopeParams p) {
  const int half = p.head_dim / 2, groups = half / kVec;
  const int64_t t = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (t >= int64_t{p.n} * groups) return;
  const int i = static_cast<int>(t / groups), j0 = static_cast<int>(t % groups) * kVec;
  const int pos = p.rows.pos[i];
  float s[kVec], c[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) rope_angle(pos, p.inv_freq[j0 + e], &s[e], &c[e]);
  const int h = blockIdx.y + (p.qkv.q ? 0 : p.n_heads);  // without q, the grid covers the kv heads only
  if (h < p.n_heads) {
    const int64_t e = int64_t{h} * p.head_dim + j0;
    __nv_bfloat16* q_out = p.q_out + int64_t{i} * p.n_heads * p.head_dim + e;
    if (pos >= 0) {
      rotate_store(p.qkv.q + i * p.qkv.ldq + e, q_out, half, s, c);
    } else {
      const float zeros[kVec] = {};
      store_as(q_out, zeros);
      store_as(q_out + half, zeros);
    }
    return;
  }
  if (pos < 0 || pos >= p.reach) return;  // a padding row, or no slot
  const int32_t* table = p.rows.block_tables + int64_t{p.rows.seq ? p.rows.seq[i] : i} * p.rows.max_blocks;
  const int64_t slot = (int64_t{table[pos >> p.block_shift]} << p.block_shift) | (pos & ((1 << p.block_shift) - 1));
  const int64_t e = int64_t{h - p.n_heads} * p.head_dim + j0;
  const int64_t at = slot * p.n_kv_heads * p.head_dim + e;
  rotate_store(p.qkv.k + i * p.qkv.ldk + e, static_cast<T*>(p.k_cache) + at, half, s, c);
  if (!p.qkv.v) return;  // the v rows are already in the cache
  float x[kVec];
  const float* v = p.qkv.v + i * p.qkv.ldv + e;
  T* v_out = static_cast<T*>(p.v_cache) + at;
  load_floats(v, x);
  store_as(v_out, x);
  load_floats(v + half, x);
  store_as(v_out + half, x);
}

template <typename T>
void launch_rope_store(const RopeParams& p, bool vec4, dim3 grid, cudaStream_t stream) {
  if (vec4)
    rope_store_kv_rows_kernel<T, 4><<<grid, kRopeThreads, 0, stream>>>(p);
  else
    rope_store_kv_rows_kernel<T, 1><<<grid, kRopeThreads, 0, stream>>>(p);
  FSVD_CUDA_CHECK_LAUNCH("rope_store_kv_rows_kernel");
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

void rope_store_kv_rows(const QkvRows& qkv, const float* inv_freq, const PagedRows& rows, int n,
                        const HeadShape& shape, const KvCacheLayer& cache, __nv_bfloat16* q_out, cudaStream_t stream) {
  const char* where = "rope_store_kv_rows";
  check_head_shape(shape, where);
  check_cache(cache, where);
  check_paged_rows(rows, where);
  check(n >= 1, where, "n ", n, " must be positive");
  check(qkv.k != nullptr && inv_freq != nullptr && (qkv.q == nullptr) == (q_out == nullptr), where,
        "null argument");
  const int64_t q_dim = int64_t{shape.n_heads} * shape.head_dim;
  const int64_t kv_dim = int64_t{shape.n_kv_heads} * shape.head_dim;
  check((qkv.q == nullptr || qkv.ldq >= q_dim) && qkv.ldk >= kv_dim && (qkv.v == nullptr || qkv.ldv >= kv_dim),
        where, "row strides ", qkv.ldq, ", ", qkv.ldk, ", ", qkv.ldv, " are shorter than the rows (", q_dim, ", ",
        kv_dim, ")");
  RopeParams p{};
  p.qkv = qkv;
  p.inv_freq = inv_freq;
  p.q_out = q_out;
  p.k_cache = cache.k;
  p.v_cache = cache.v;
  p.rows = rows;
  while ((1 << p.block_shift) < cache.block_size) ++p.block_shift;
  p.reach = table_reach(rows, cache);
  p.n = n;
  p.n_heads = shape.n_heads;
  p.n_kv_heads = shape.n_kv_heads;
  p.head_dim = shape.head_dim;
  // 16-byte loads need 16-byte aligned rows; q_out takes 8-byte stores.
  const auto aligned = [](const void* ptr, int bytes) {
    return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
  };
  const bool vec4 = aligned(qkv.q, 16) && aligned(qkv.k, 16) && aligned(qkv.v, 16) && aligned(q_out, 8) &&
                    qkv.ldq % 4 == 0 && qkv.ldk % 4 == 0 && qkv.ldv % 4 == 0;
  const int64_t work = int64_t{n} * (shape.head_dim / 2) / (vec4 ? 4 : 1);
  const dim3 grid(static_cast<unsigned>((work + kRopeThreads - 1) / kRopeThreads),
                  static_cast<unsigned>((qkv.q ? shape.n_heads : 0) + shape.n_kv_heads));
  switch (cache.type) {
    case ElementType::F32: return launch_rope_store<float>(p, vec4, grid, stream);
    case ElementType::F8E4M3: return launch_rope_store<__nv_fp8_e4m3>(p, vec4, grid, stream);
    case ElementType::BF16: return launch_rope_store<__nv_bfloat16>(p, vec4, grid, stream);
  }
}

void store_row_bf16(const float* x, int64_t cols, const int* d_pos, int max_rows, __nv_bfloat16* rows, int64_t ld,
                    cudaStream_t stream) {
  check(x != nullptr && d_pos != nullptr && rows != nullptr && cols >= 1 && ld >= cols && max_rows >= 1,
        "store_row_bf16", "bad arguments: cols ", cols, ", ld ", ld, ", max_rows ", max_rows);
  store_row_bf16_kernel<<<grid_for(1, cols), kThreads, 0, stream>>>(x, cols, d_pos, max_rows, rows, ld);
  FSVD_CUDA_CHECK_LAUNCH("store_row_bf16_kernel");
}

}  // namespace fsvd::cuda
