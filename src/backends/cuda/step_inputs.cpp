#include "backends/cuda/step_inputs.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {

StepInputs::StepInputs(int rows, int max_blocks) : rows_(rows), max_blocks_(max_blocks) {
  check(rows >= 1 && max_blocks >= 1, "StepInputs", rows, " rows of ", max_blocks, " blocks");
  // Parameters first: their 8-byte seed sets the strictest alignment.
  tokens_at_ = size_t(rows) * sizeof(SamplingParams);
  pos_at_ = tokens_at_ + size_t(rows) * sizeof(int32_t);
  tables_at_ = pos_at_ + size_t(rows) * sizeof(int);
  const size_t bytes = tables_at_ + size_t(rows) * max_blocks * sizeof(int32_t);
  FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(host_.put()), bytes, cudaHostAllocDefault));
  device_ = DeviceBuffer<uint8_t>(bytes);
  std::fill_n(host_params(), rows, SamplingParams{});
  std::fill_n(host_tokens(), rows, 0);
  std::fill_n(host_pos(), rows, -1);
  std::fill_n(host_tables(), size_t(rows) * max_blocks, 0);
  device_.upload(std::span<const uint8_t>(host_.get(), bytes));
}

void StepInputs::set_table(int r, std::span<const int32_t> blocks) {
  int32_t* table = host_tables() + int64_t{r} * max_blocks_;
  const size_t n = std::min<size_t>(blocks.size(), max_blocks_);
  const bool same = std::equal(blocks.begin(), blocks.begin() + n, table) &&
                    std::all_of(table + n, table + max_blocks_, [](int32_t b) { return b == 0; });
  if (same) return;
  std::copy_n(blocks.begin(), n, table);
  std::fill(table + n, table + max_blocks_, 0);
  changed_rows_ = std::max(changed_rows_, r + 1);
}

void StepInputs::upload(cudaStream_t stream) {
  const size_t bytes = tables_at_ + size_t(changed_rows_) * max_blocks_ * sizeof(int32_t);
  FSVD_CUDA_CHECK(cudaMemcpyAsync(device_.data(), host_.get(), bytes, cudaMemcpyHostToDevice, stream));
  changed_rows_ = 0;
}

}  // namespace fsvd::cuda
