#pragma once
// Causal grouped-query attention over a dense KV cache (fp32 reference).
#include <cstdint>

namespace fsvd::cpu {

struct HeadShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // divides n_heads; query head h reads kv head h / (n_heads / n_kv_heads)
  int head_dim = 0;
};

// Query row i (of n) sits at position pos0 + i and attends to cache positions
// [0, pos0 + i]. q: [n, n_heads * head_dim] with row stride ldq; k_cache,
// v_cache: [>= pos0 + n, n_kv_heads * head_dim]; out: [n, n_heads * head_dim].
// Scores are scaled by 1/sqrt(head_dim).
void attention(const float* q, int64_t ldq, const float* k_cache, const float* v_cache, int n,
               int pos0, const HeadShape& shape, float* out);

}  // namespace fsvd::cpu
