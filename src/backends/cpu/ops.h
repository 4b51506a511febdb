#pragma once
// Row-wise fp32 ops of the CPU reference backend. Matrices are row-major with
// an explicit row stride where callers work on column slices.
#include <cstdint>

namespace fsvd::cpu {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, for rows r < n of width dim.
// The sum of squares accumulates in double; the rest is fp32 as in HF.
void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, float* out);

// Rotates every head of x [n rows, row stride ld, n_heads * head_dim used] in
// place; row i sits at position pos0 + i. HF rotate_half convention: pairs
// (j, j + head_dim/2) turn by the angle float(pos) * inv_freq[j], in fp32.
void rope(float* x, int64_t n, int64_t ld, int n_heads, int head_dim, int pos0,
          const float* inv_freq /* head_dim / 2 */);

// out = silu(gate) * up elementwise over count values (out may alias gate or up).
void silu_mul(const float* gate, const float* up, int64_t count, float* out);

// out[r] = (x[r] - mean) / sqrt(var + eps) * w + b over rows of width dim
// (population variance, as torch's LayerNorm); statistics in double.
void layernorm(const float* x, const float* w, const float* b, int64_t n, int64_t dim, float eps, float* out);

// In place: x = x * Φ(x), the exact (erf) GELU of BERT's "gelu".
void gelu(float* x, int64_t count);

// In-place L2 normalization of x[0..n) (sentence-transformers' Normalize:
// divides by max(norm, 1e-12)).
void l2_normalize(float* x, int64_t n);

// In-place softmax of x[0..n), max-subtracted.
void softmax(float* x, int64_t n);

// In place: each of x[0..n) as the nearest fp8 e4m3 value (the fp8 KV cache;
// core/dtype.h's f32_to_e4m3, as the GPU's round_e4m3).
void round_e4m3(float* x, int64_t n);

}  // namespace fsvd::cpu
