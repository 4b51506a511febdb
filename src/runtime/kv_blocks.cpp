#include "runtime/kv_blocks.h"

#include "core/error.h"

namespace fsvd {

KvBlocks::KvBlocks(int blocks, int block_size) : total_(blocks), block_size_(block_size) {
  check(blocks > 0 && block_size > 0, "KvBlocks", blocks, " blocks of ", block_size, " positions");
  free_.reserve(blocks);
  for (int b = blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 handed out first
}

bool KvBlocks::grow(std::vector<int32_t>& table, int64_t positions) {
  const int64_t more = needed(positions) - static_cast<int64_t>(table.size());
  if (more <= 0) return true;
  if (more > static_cast<int64_t>(free_.size())) return false;
  for (int64_t i = 0; i < more; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KvBlocks::release(std::vector<int32_t>& table) {
  free_.insert(free_.end(), table.rbegin(), table.rend());
  table.clear();
}

}  // namespace fsvd
