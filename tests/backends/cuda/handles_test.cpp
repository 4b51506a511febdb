// Handle releases what it owns exactly once: on reset, on put, on move
// assignment and at its end, never after a move. Needs no GPU (a fake
// destroy function counts the releases).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/handles.h"

#include <gtest/gtest.h>

#include <utility>

namespace fsvd::cuda {
namespace {

int released[3];

int release(int* p) {
  ++*p;
  return 0;
}
using Owned = Handle<int*, release>;

Owned holding(int i) {
  Owned h;
  *h.put() = &released[i];
  return h;
}

TEST(CudaHandles, ReleaseEachHandleOnceWhereverOwnershipEnds) {
  released[0] = released[1] = released[2] = 0;
  {
    Owned empty;
    EXPECT_EQ(empty.get(), nullptr);
    Owned a = holding(0);
    Owned b = std::move(a);  // moved: a releases nothing
    EXPECT_EQ(a.get(), nullptr);
    EXPECT_EQ(static_cast<int*>(b), &released[0]);
    b = holding(1);  // the previous handle goes
    EXPECT_EQ(released[0], 1);
    *b.put() = &released[2];  // so does this one
    EXPECT_EQ(released[1], 1);
    EXPECT_EQ(released[2], 0);
  }
  EXPECT_EQ(released[0], 1);
  EXPECT_EQ(released[1], 1);
  EXPECT_EQ(released[2], 1);
  Owned c = holding(0);
  c.reset();
  c.reset();
  EXPECT_EQ(released[0], 2);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
