#pragma once
// One sequence over a pool of KV blocks laid out in order: its block table
// is 0, 1, 2, ..., so position t sits at pool row t and the pool is the dense
// [position, kv_dim] layout (which prefill attention, and prefill's v GEMM
// writing cache rows in place, rely on). CudaExecutor's cache and the
// low-rank KV cache's scratch are such pools.
#include <cstdint>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

class IdentityPages {
 public:
  // For `context` positions: ceil(context / block_size) blocks.
  explicit IdentityPages(int context, int block_size = kDefaultBlockSize);

  int context() const { return context_; }
  int block_size() const { return block_size_; }
  int num_blocks() const { return num_blocks_; }
  // The pool over k and v (each num_blocks() * block_size() rows of `type`).
  KvCacheLayer pool(void* k, void* v, ElementType type) const { return {k, v, block_size_, num_blocks_, type}; }
  // Rows at positions [pos, pos + n) (a prompt chunk; n <= context - pos).
  PagedRows chunk(int pos) const { return chunk(pos, table_.data(), num_blocks_); }
  // The same positions of another sequence of the pool, whose block table
  // (device memory, max_blocks entries) is `table`.
  PagedRows chunk(int pos, const int32_t* table, int max_blocks) const {
    return {positions_.data() + pos, zeros_.data(), table, max_blocks};
  }
  // The decode step's row, its position in device memory.
  PagedRows token(const int* d_pos) const { return {d_pos, nullptr, table_.data(), num_blocks_}; }

 private:
  int context_, block_size_, num_blocks_;
  DeviceBuffer<int32_t> table_;  // [num_blocks]: block i is pool block i
  DeviceBuffer<int> positions_;  // [context]: t at index t
  DeviceBuffer<int> zeros_;      // [context]: every chunk row reads table row 0
};

}  // namespace fsvd::cuda
