#pragma once
// Bookkeeping of the executor's paged KV cache: which blocks are free, and
// each sequence's block table (Executor::KvPages). Memory is taken as a
// sequence grows and given back whole when it leaves.
#include <cstdint>
#include <vector>

namespace fsvd {

class KvBlocks {
 public:
  KvBlocks(int blocks, int block_size);
  int free_blocks() const { return static_cast<int>(free_.size()); }
  int total_blocks() const { return total_; }
  int block_size() const { return block_size_; }
  // Blocks a table needs to hold `positions`.
  int64_t needed(int64_t positions) const { return (positions + block_size_ - 1) / block_size_; }
  // Appends free blocks to `table` until it holds `positions`; takes nothing
  // and returns false when too few are free.
  bool grow(std::vector<int32_t>& table, int64_t positions);
  // Gives every block of `table` back and empties it.
  void release(std::vector<int32_t>& table);

 private:
  int total_, block_size_;
  std::vector<int32_t> free_;  // a stack: the last freed block is reused first
};

}  // namespace fsvd
