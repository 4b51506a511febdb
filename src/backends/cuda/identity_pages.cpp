#include "backends/cuda/identity_pages.h"

#include <numeric>
#include <vector>

#include "core/error.h"

namespace fsvd::cuda {

IdentityPages::IdentityPages(int context, int block_size)
    : context_(context), block_size_(block_size),
      num_blocks_(static_cast<int>(ceil_div(context, block_size))) {
  check(context >= 1 && block_size >= 1, "IdentityPages", "context ", context, ", block size ", block_size);
  std::vector<int> iota(context);
  std::iota(iota.begin(), iota.end(), 0);
  positions_ = DeviceBuffer<int>(context);
  positions_.upload(iota);
  table_ = DeviceBuffer<int32_t>(num_blocks_);
  table_.upload(std::span<const int32_t>(iota.data(), num_blocks_));
  zeros_ = DeviceBuffer<int>(context);
  zeros_.zero();
}

}  // namespace fsvd::cuda
