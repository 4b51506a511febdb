#pragma once
// Causal grouped-query attention over one sequence's KV cache (fp32 reference).
#include <cstdint>

namespace fsvd::cpu {

struct HeadShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // divides n_heads; query head h reads kv head h / (n_heads / n_kv_heads)
  int head_dim = 0;
};

// Where one sequence's cached keys and values are: position t is row row(t) of
// k and v (rows of n_kv_heads * head_dim values, stride ld). Dense (blocks
// null): row t. Paged: position t sits in block blocks[t / block_size] of a
// pool of blocks of block_size rows.
struct KvView {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t ld = 0;
  const int32_t* blocks = nullptr;
  int block_size = 0;
  int64_t row(int t) const {
    return blocks ? int64_t{blocks[t / block_size]} * block_size + t % block_size : t;
  }
};

// Query row i (of n) sits at position pos0 + i and attends to cache positions
// [0, pos0 + i], or with `causal` false (an encoder) to all of [0, pos0 + n).
// q: [n, n_heads * head_dim] with row stride ldq; out: [n, n_heads * head_dim].
// Scores are scaled by 1/sqrt(head_dim).
void attention(const float* q, int64_t ldq, const KvView& kv, int n, int pos0, const HeadShape& shape,
               float* out, bool causal = true);

}  // namespace fsvd::cpu
