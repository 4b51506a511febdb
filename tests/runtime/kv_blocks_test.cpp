#include "runtime/kv_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

TEST(KvBlocks, GrowsTablesAsPositionsGrowAndTakesNothingWhenShort) {
  KvBlocks blocks(5, 4);
  std::vector<int32_t> a, b;
  EXPECT_TRUE(blocks.grow(a, 1));
  EXPECT_EQ(a.size(), 1u);
  EXPECT_TRUE(blocks.grow(a, 4));  // still one block
  EXPECT_EQ(a.size(), 1u);
  EXPECT_TRUE(blocks.grow(a, 9));
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(blocks.free_blocks(), 2);
  EXPECT_FALSE(blocks.grow(b, 12));  // needs 3 of the 2 free
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(blocks.free_blocks(), 2);
  EXPECT_TRUE(blocks.grow(b, 8));
  std::vector<int32_t> all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 3, 4}));  // each block handed out once
  blocks.release(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(blocks.free_blocks(), 3);
  EXPECT_TRUE(blocks.grow(b, 20));
  EXPECT_EQ(blocks.free_blocks(), 0);
}

TEST(KvBlocks, RefusesEmptyPools) {
  EXPECT_THROW(KvBlocks(0, 16), Error);
  EXPECT_THROW(KvBlocks(4, 0), Error);
}

}  // namespace
}  // namespace fsvd
