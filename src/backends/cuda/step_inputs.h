#pragma once
// The inputs of a decode step's rows, laid out the same way in pinned host
// memory and on the device: sampling parameters, tokens, positions, then the
// block tables (max_blocks entries a row). A step's inputs go up in one copy,
// and the tables, which change only when a sequence enters a new block or
// the rows change sequences, only when they changed.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/handles.h"
#include "core/sampling_params.h"

namespace fsvd::cuda {

class StepInputs {
 public:
  StepInputs() = default;
  // Rows of default parameters, token 0, position -1 (padding) and empty tables, on both sides.
  StepInputs(int rows, int max_blocks);

  // The host side: written only while no copy from it is in flight (after
  // the previous step has completed).
  SamplingParams& params(int r) { return host_params()[r]; }
  int32_t& token(int r) { return host_tokens()[r]; }
  int& pos(int r) { return host_pos()[r]; }
  // Row r's block table: the first max_blocks of `blocks`, then zeros.
  void set_table(int r, std::span<const int32_t> blocks);
  // Queues the copy of every row's parameters, token and position, and of
  // the tables as far as the last row whose table changed since the last copy.
  void upload(cudaStream_t stream);

  // The device side (the tokens and positions a step may advance there).
  SamplingParams* device_params() const { return reinterpret_cast<SamplingParams*>(device_.data()); }
  int32_t* device_tokens() const { return reinterpret_cast<int32_t*>(device_.data() + tokens_at_); }
  int* device_pos() const { return reinterpret_cast<int*>(device_.data() + pos_at_); }
  int32_t* device_tables() const { return reinterpret_cast<int32_t*>(device_.data() + tables_at_); }

 private:
  SamplingParams* host_params() { return reinterpret_cast<SamplingParams*>(host_.get()); }
  int32_t* host_tokens() { return reinterpret_cast<int32_t*>(host_.get() + tokens_at_); }
  int* host_pos() { return reinterpret_cast<int*>(host_.get() + pos_at_); }
  int32_t* host_tables() { return reinterpret_cast<int32_t*>(host_.get() + tables_at_); }

  int rows_ = 0, max_blocks_ = 0;
  size_t tokens_at_ = 0, pos_at_ = 0, tables_at_ = 0;  // byte offsets
  int changed_rows_ = 0;  // tables [0, changed_rows_) go up with the next copy
  PinnedHost<uint8_t> host_;
  DeviceBuffer<uint8_t> device_;
};

}  // namespace fsvd::cuda
