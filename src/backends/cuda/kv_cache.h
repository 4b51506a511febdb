#pragma once
// Shapes shared by the attention and KV-store kernels: the head layout of one
// layer, its paged KV cache (a pool of blocks: bf16; fp8 e4m3, half the bytes;
// or fp32 for exact checks), the rows a step writes into it and the step's
// new q, k, v. C++17 (included by .cu files).
#include <cuda_bf16.h>  // the default element type, which readers of the cache cast to

#include <cstdint>
#include <string>

#include "backends/cuda/device_matrix.h"
#include "core/error.h"

namespace fsvd::cuda {

struct HeadShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // divides n_heads; query head h reads kv head h / (n_heads / n_kv_heads)
  int head_dim = 0;    // 64, 80, 96, 128 or 256
};

// Positions a block holds unless a caller picks another size.
constexpr int kDefaultBlockSize = 16;

// One layer's cache as a pool of blocks: k and v each [num_blocks *
// block_size, n_kv_heads * head_dim] values of `type`, row-major, rows
// 16-byte aligned (the kernels read them with 16-byte loads). A sequence's
// position p lives at pool row block_table[p / block_size] * block_size +
// p % block_size (PagedRows). A single sequence over blocks 0, 1, 2, ... in
// order (an identity block table) makes the pool the dense [position, kv_dim]
// layout. The pointers are untyped because `type` says what they hold.
struct KvCacheLayer {
  void* k = nullptr;
  void* v = nullptr;
  int block_size = kDefaultBlockSize;  // a power of two, 16..1024
  int num_blocks = 0;
  ElementType type = ElementType::BF16;
  int64_t rows() const { return int64_t{num_blocks} * block_size; }
};

// The rows a step writes (and, in decode, attends from), described in device
// memory so that one captured graph serves every step of the same size.
struct PagedRows {
  const int* pos = nullptr;               // [rows] position of each row; < 0: a padding row
  const int* seq = nullptr;               // [rows] which block-table row; nullptr: row r uses table row r
  const int32_t* block_tables = nullptr;  // [sequences, max_blocks]: pool block of each block of positions
  int max_blocks = 0;                     // row stride of block_tables
};

// The step's new q, k and v before RoPE: [rows, dim] fp32 with row strides
// in elements (column slices of one packed qkv output, say).
struct QkvRows {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t ldq = 0, ldk = 0, ldv = 0;
};

inline void check_head_shape(const HeadShape& s, const std::string& where) {
  check(s.head_dim == 64 || s.head_dim == 80 || s.head_dim == 96 || s.head_dim == 128 || s.head_dim == 256, where,
        "head_dim ", s.head_dim, " is not supported (64, 80, 96, 128 or 256)");
  check(s.n_heads >= 1 && s.n_kv_heads >= 1 && s.n_heads % s.n_kv_heads == 0, where, "n_heads ",
        s.n_heads, " is not a positive multiple of n_kv_heads ", s.n_kv_heads);
  check(s.n_heads <= 1024, where, "n_heads ", s.n_heads, " is too large");
}

inline void check_cache(const KvCacheLayer& c, const std::string& where) {
  check(c.k != nullptr && c.v != nullptr, where, "null KV cache");
  check(reinterpret_cast<uintptr_t>(c.k) % 16 == 0 && reinterpret_cast<uintptr_t>(c.v) % 16 == 0,
        where, "KV cache must be 16-byte aligned");
  check(c.block_size >= 16 && c.block_size <= 1024 && (c.block_size & (c.block_size - 1)) == 0, where,
        "block size ", c.block_size, " is not a power of two in 16..1024");
  check(c.num_blocks >= 1, where, "KV cache of ", c.num_blocks, " blocks");
}

// How many positions a block-table row reaches: the kernels write no slot
// for a position at or past it.
inline int64_t table_reach(const PagedRows& rows, const KvCacheLayer& cache) {
  return int64_t{rows.max_blocks} * cache.block_size;
}

inline void check_paged_rows(const PagedRows& rows, const std::string& where) {
  check(rows.pos != nullptr && rows.block_tables != nullptr, where, "null positions or block tables");
  check(rows.max_blocks >= 1, where, "block tables of ", rows.max_blocks, " blocks a row");
}

}  // namespace fsvd::cuda
