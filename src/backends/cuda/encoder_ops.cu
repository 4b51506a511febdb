// The encoder's element-wise ops (see encoder_ops.h).
#include "backends/cuda/encoder_ops.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <initializer_list>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"
#include "backends/cuda/reduce.cuh"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxF32AttentionLen = 8192;  // attention_f32 keeps a row's scores in shared memory

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// LayerNorm runs one warp per row: each lane takes chunks of 8 values (one
// 16-byte load of bf16, two of fp32) when the width allows, else single
// values; sum and sum of squares in double (as cpu::layernorm, whose
// two-pass variance this matches to double rounding), then a second pass
// over the row (now in L1) writes it normalized.
constexpr int kRowsPerCta = kThreads / 32;

struct Vals8 {
  float v[8];
};
__device__ __forceinline__ Vals8 load8(const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  return {{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}
__device__ __forceinline__ Vals8 load8(const __nv_bfloat16* p) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  return {{bf16_lo(u.x), bf16_hi(u.x), bf16_lo(u.y), bf16_hi(u.y), bf16_lo(u.z), bf16_hi(u.z), bf16_lo(u.w),
           bf16_hi(u.w)}};
}
__device__ __forceinline__ void store8(float* p, const Vals8& x) {
  reinterpret_cast<float4*>(p)[0] = make_float4(x.v[0], x.v[1], x.v[2], x.v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(x.v[4], x.v[5], x.v[6], x.v[7]);
}
__device__ __forceinline__ void store8(__nv_bfloat16* p, const Vals8& x) {
  *reinterpret_cast<uint4*>(p) = make_uint4(pack_bf16(x.v[0], x.v[1]), pack_bf16(x.v[2], x.v[3]),
                                            pack_bf16(x.v[4], x.v[5]), pack_bf16(x.v[6], x.v[7]));
}

__device__ __forceinline__ double warp_sum_double(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// A row of `dim` values given by at(i) (scalar) or at8(i) (8 values from i,
// when `vec`), normalized into out.
template <typename T, typename At, typename At8>
__device__ __forceinline__ void layernorm_row(At at, At8 at8, bool vec, int64_t dim, const float* w, const float* b,
                                              float eps, T* out) {
  const int lane = threadIdx.x % 32;
  double sum = 0, ss = 0;
  if (vec) {
    for (int64_t i = lane * 8; i < dim; i += 256) {
      const Vals8 x = at8(i);
#pragma unroll
      for (int j = 0; j < 8; ++j) sum += x.v[j], ss += double{x.v[j]} * x.v[j];
    }
  } else {
    for (int64_t i = lane; i < dim; i += 32) {
      const float x = at(i);
      sum += x, ss += double{x} * x;
    }
  }
  sum = warp_sum_double(sum), ss = warp_sum_double(ss);
  const double mean = sum / static_cast<double>(dim);
  const double var = fmax(ss / static_cast<double>(dim) - mean * mean, 0.0);
  const float inv = static_cast<float>(1.0 / sqrt(var + eps)), m = static_cast<float>(mean);
  if (vec) {
    for (int64_t i = lane * 8; i < dim; i += 256) {
      Vals8 x = at8(i);
      const Vals8 g = load8(w + i), h = load8(b + i);
#pragma unroll
      for (int j = 0; j < 8; ++j) x.v[j] = (x.v[j] - m) * inv * g.v[j] + h.v[j];
      store8(out + i, x);
    }
  } else {
    for (int64_t i = lane; i < dim; i += 32) store(out, i, (at(i) - m) * inv * w[i] + b[i]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    embed_layernorm_kernel(const int32_t* ids, const int32_t* pos, const int32_t* type_ids, const T* words,
                           const T* positions, const T* types, int64_t n, int64_t dim, bool vec, const float* w,
                           const float* b, float eps, T* out) {
  const int64_t r = blockIdx.x * int64_t{kRowsPerCta} + threadIdx.x / 32;
  if (r >= n) return;
  const T* word = words + ids[r] * dim;
  const T* position = positions + pos[r] * dim;
  const T* type = types ? types + type_ids[r] * dim : nullptr;
  // The CPU twin's order: (word + position) + type.
  auto at = [=](int64_t i) { return load(word, i) + load(position, i) + (type ? load(type, i) : 0.0f); };
  auto at8 = [=](int64_t i) {
    Vals8 x = load8(word + i);
    const Vals8 p = load8(position + i);
#pragma unroll
    for (int j = 0; j < 8; ++j) x.v[j] += p.v[j];
    if (type) {
      const Vals8 t = load8(type + i);
#pragma unroll
      for (int j = 0; j < 8; ++j) x.v[j] += t.v[j];
    }
    return x;
  };
  layernorm_row(at, at8, vec, dim, w, b, eps, out + r * dim);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    layernorm_kernel(T* x, int64_t n, int64_t dim, bool vec, const float* w, const float* b, float eps) {
  const int64_t r = blockIdx.x * int64_t{kRowsPerCta} + threadIdx.x / 32;
  if (r >= n) return;
  T* xr = x + r * dim;
  layernorm_row([=](int64_t i) { return load(xr, i); }, [=](int64_t i) { return load8(xr + i); }, vec, dim, w, b,
                eps, xr);
}

// Chunks of 8 values per thread (a 16-byte load of bf16), the tail singly.
template <typename T>
__global__ void gelu_kernel(T* x, int64_t count) {
  auto g = [](float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); };
  const int64_t stride = int64_t{gridDim.x} * blockDim.x, chunks = count / 8;
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < chunks; c += stride) {
    Vals8 v = load8(x + 8 * c);
#pragma unroll
    for (int j = 0; j < 8; ++j) v.v[j] = g(v.v[j]);
    store8(x + 8 * c, v);
  }
  for (int64_t i = 8 * chunks + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += stride)
    store(x, i, g(load(x, i)));
}

// Block (head, row): scores of the row's query against its sequence's keys
// in shared memory, softmax, then each output value as a weighted sum.
__global__ void __launch_bounds__(kThreads)
    attention_f32_kernel(const float* q, int64_t ldq, const float* k, const float* v, int64_t ldkv,
                         const int32_t* seq_offsets, int seqs, int head_dim, float scale, float* out, int64_t ldo) {
  extern __shared__ float score[];
  __shared__ float partial[kThreads / 32];
  const int head = blockIdx.x;
  const int64_t r = blockIdx.y;
  int lo = 0, hi = seqs;  // the sequence s with seq_offsets[s] <= r < seq_offsets[s + 1]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (seq_offsets[mid] <= r ? lo : hi) = mid;
  }
  const int64_t first = seq_offsets[lo];
  const int len = seq_offsets[lo + 1] - static_cast<int>(first);
  const float* qr = q + r * ldq + head * head_dim;
  float mx = -INFINITY;
  for (int t = threadIdx.x; t < len; t += kThreads) {
    const float* kr = k + (first + t) * ldkv + head * head_dim;
    float dot = 0;
    for (int i = 0; i < head_dim; ++i) dot += qr[i] * kr[i];
    score[t] = dot * scale;
    mx = fmaxf(mx, score[t]);
  }
  mx = block_max(mx, partial, kThreads / 32);
  float sum = 0;
  for (int t = threadIdx.x; t < len; t += kThreads) sum += score[t] = expf(score[t] - mx);
  __syncthreads();  // partial is reused
  const float inv = 1.0f / block_sum(sum, partial, kThreads / 32);
  for (int i = threadIdx.x; i < head_dim; i += kThreads) {
    float acc = 0;
    for (int t = 0; t < len; ++t) acc += score[t] * v[(first + t) * ldkv + head * head_dim + i];
    out[r * ldo + head * head_dim + i] = acc * inv;
  }
}

// Rows move in chunks of 8 values when the width is a multiple of 8 and every
// row pointer is 16-byte aligned (then every row start is too: all of the encoder's).
bool vectorizable(int64_t dim, std::initializer_list<const void*> ptrs) {
  if (dim % 8 != 0) return false;
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

void check_rows(const char* where, int64_t n, int64_t dim) {
  check(n >= 1 && n <= INT32_MAX && dim >= 1, where, "shape [", n, ", ", dim, "]");
}

}  // namespace

void attention_f32(const float* q, int64_t ldq, const float* k, const float* v, int64_t ldkv,
                   const int32_t* seq_offsets, int seqs, int max_len, int64_t rows, int n_heads, int head_dim,
                   float* out, int64_t ldo, cudaStream_t stream) {
  const char* where = "cuda::attention_f32";
  check(max_len >= 1 && max_len <= kMaxF32AttentionLen, where, "sequences of ", max_len, " rows (at most ",
        kMaxF32AttentionLen, ")");
  check(q && k && v && seq_offsets && out, where, "null argument");
  check(seqs >= 1 && rows >= 1 && rows <= 65535 * int64_t{1024} && n_heads >= 1 && head_dim >= 1 &&
            ldq >= int64_t{n_heads} * head_dim && ldo >= int64_t{n_heads} * head_dim,
        where, "bad shape: ", seqs, " sequences, ", rows, " rows, ", n_heads, " heads of ", head_dim);
  check(rows <= 65535, where, rows, " rows exceed one launch's grid (65535)");
  const size_t smem = static_cast<size_t>(max_len) * sizeof(float);
  FSVD_CUDA_CHECK(cudaFuncSetAttribute(attention_f32_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       kMaxF32AttentionLen * static_cast<int>(sizeof(float))));
  attention_f32_kernel<<<dim3(n_heads, static_cast<unsigned>(rows)), kThreads, smem, stream>>>(
      q, ldq, k, v, ldkv, seq_offsets, seqs, head_dim, 1.0f / sqrtf(static_cast<float>(head_dim)), out, ldo);
  FSVD_CUDA_CHECK_LAUNCH("attention_f32_kernel");
}

void embed_layernorm(const int32_t* ids, const int32_t* pos, const int32_t* type_ids, const EmbeddingTables& tables,
                     const float* w, const float* b, float eps, int64_t n, void* out, cudaStream_t stream) {
  const char* where = "cuda::embed_layernorm";
  const int64_t dim = tables.words.cols;
  check_rows(where, n, dim);
  check(ids && pos && (type_ids || !tables.types.data) && tables.words.data && tables.positions.data && w && b && out,
        where, "null argument");
  for (const DeviceMatrix* m : {&tables.words, &tables.positions, &tables.types})
    check(!m->data || (m->cols == dim && m->ld == dim && m->type == tables.words.type), where,
          "tables must share their width, contiguous rows and type");
  const auto grid = static_cast<unsigned>(ceil_div(n, kRowsPerCta));
  const bool vec = vectorizable(dim, {tables.words.data, tables.positions.data, tables.types.data, w, b, out});
  if (tables.words.type == ElementType::F32) {
    using T = float;
    embed_layernorm_kernel<<<grid, kThreads, 0, stream>>>(
        ids, pos, type_ids, static_cast<const T*>(tables.words.data), static_cast<const T*>(tables.positions.data),
        static_cast<const T*>(tables.types.data), n, dim, vec, w, b, eps, static_cast<T*>(out));
  } else {
    using T = __nv_bfloat16;
    embed_layernorm_kernel<<<grid, kThreads, 0, stream>>>(
        ids, pos, type_ids, static_cast<const T*>(tables.words.data), static_cast<const T*>(tables.positions.data),
        static_cast<const T*>(tables.types.data), n, dim, vec, w, b, eps, static_cast<T*>(out));
  }
  FSVD_CUDA_CHECK_LAUNCH("embed_layernorm_kernel");
}

void layernorm(void* x, ElementType type, const float* w, const float* b, int64_t n, int64_t dim, float eps,
               cudaStream_t stream) {
  const char* where = "cuda::layernorm";
  check_rows(where, n, dim);
  check(x && w && b, where, "null argument");
  const auto grid = static_cast<unsigned>(ceil_div(n, kRowsPerCta));
  const bool vec = vectorizable(dim, {x, w, b});
  if (type == ElementType::F32)
    layernorm_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(x), n, dim, vec, w, b, eps);
  else
    layernorm_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(x), n, dim, vec, w, b, eps);
  FSVD_CUDA_CHECK_LAUNCH("layernorm_kernel");
}

void gelu(void* x, ElementType type, int64_t count, cudaStream_t stream) {
  check(x && count >= 1, "cuda::gelu", "null argument or no values (", count, ")");
  check(reinterpret_cast<uintptr_t>(x) % 16 == 0, "cuda::gelu", "x must be 16-byte aligned");
  const auto grid = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(count / 8, kThreads), 1, 8192));
  if (type == ElementType::F32)
    gelu_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(x), count);
  else
    gelu_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(x), count);
  FSVD_CUDA_CHECK_LAUNCH("gelu_kernel");
}

}  // namespace fsvd::cuda
