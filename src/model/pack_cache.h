#pragma once
// Remembers which groups of tensors were already stacked, so that layers
// sharing the same bases (same storage) share one stacked tensor too.
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace fsvd {

struct PackCache {
  // Returns the row-stack of `parts`, reusing an earlier stack of the same tensors.
  Tensor stacked(const std::vector<Tensor>& parts);

 private:
  // The originals are held so their addresses cannot be reused while packing.
  std::vector<std::pair<std::vector<Tensor>, Tensor>> entries_;
};

}  // namespace fsvd
