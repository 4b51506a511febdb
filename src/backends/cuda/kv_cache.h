#pragma once
// Shapes shared by the attention and KV-store kernels: the head layout of one
// layer and its dense KV cache (bf16, or fp32 for exact checks). C++17
// (included by .cu files).
#include <cuda_bf16.h>  // the default element type, which readers of the cache cast to

#include <cstdint>
#include <string>

#include "backends/cuda/device_matrix.h"
#include "core/error.h"

namespace fsvd::cuda {

struct HeadShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // divides n_heads; query head h reads kv head h / (n_heads / n_kv_heads)
  int head_dim = 0;    // 64 or 128
};

// One layer's cache: k and v each [max_ctx, n_kv_heads * head_dim] values of
// `type`, row-major, rows 16-byte aligned (the kernels read them with 16-byte
// loads). The pointers are untyped because `type` says what they hold.
struct KvCacheLayer {
  void* k = nullptr;
  void* v = nullptr;
  int max_ctx = 0;
  ElementType type = ElementType::BF16;
};

inline void check_head_shape(const HeadShape& s, const std::string& where) {
  check(s.head_dim == 64 || s.head_dim == 128, where, "head_dim ", s.head_dim,
        " is not supported (64 or 128)");
  check(s.n_heads >= 1 && s.n_kv_heads >= 1 && s.n_heads % s.n_kv_heads == 0, where, "n_heads ",
        s.n_heads, " is not a positive multiple of n_kv_heads ", s.n_kv_heads);
  check(s.n_heads <= 1024, where, "n_heads ", s.n_heads, " is too large");
}

inline void check_cache(const KvCacheLayer& c, const std::string& where) {
  check(c.k != nullptr && c.v != nullptr, where, "null KV cache");
  check(reinterpret_cast<uintptr_t>(c.k) % 16 == 0 && reinterpret_cast<uintptr_t>(c.v) % 16 == 0,
        where, "KV cache must be 16-byte aligned");
  check(c.max_ctx >= 1, where, "KV cache of ", c.max_ctx, " positions");
}

// A bf16 cache (prefill's kernels read it with tensor cores) whose rows [pos, pos + n) exist.
inline void check_cache_rows(int pos, int n, const KvCacheLayer& cache, const std::string& where) {
  check_cache(cache, where);
  check(cache.type == ElementType::BF16, where, "needs a bf16 KV cache");
  check(n >= 1, where, "n ", n, " must be positive");
  check(pos >= 0 && int64_t{pos} + n <= cache.max_ctx, where, "positions [", pos, ", ",
        int64_t{pos} + n, ") do not fit a cache of ", cache.max_ctx);
}

}  // namespace fsvd::cuda
