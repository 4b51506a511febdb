#pragma once
// The GPU encoder: a batch of variable-length inputs packed without padding
// through every layer at once. Each factor chain is cuBLASLt GEMMs over all
// rows (bias, the residual add and, in bf16, GELU in the epilogue), attention
// is the flash kernel over each input's own rows (flash_attention.h),
// LayerNorm one launch (encoder_ops.h). bf16 activations, or fp32 for exact
// checks against CpuEncoder (GELU then the exact erf kernel). In bf16, heads
// smaller than the kernel's 64 (MiniLM's 32) run zero-padded (DeviceEncoder). Activation
// memory: the residual stream, the rank-space rows, and one work buffer that
// holds q|k|v during attention and the MLP's intermediate after it. A batch
// shape seen before replays a CUDA graph of the whole pass; in bf16, shapes
// are padded to buckets (pass_bucket) so that a server's batches, whose exact
// shapes rarely repeat, replay them too.
#include <compare>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_encoder.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/handles.h"
#include "backends/encoder_executor.h"

namespace fsvd::cuda {

// The shape of a pass: packed rows, inputs, the longest input's rows.
struct EncoderPassShape {
  int64_t rows;
  int seqs, max_len;
  auto operator<=>(const EncoderPassShape&) const = default;
};

// The bucket a bf16 pass of shape s runs as, when it has fewer than 4096
// rows (larger passes are bound by their GEMMs and keep their shape): rows
// padded up to a multiple of 1/8 of the largest power of two at or below them,
// at least 16 (fewer than 16 rows more, at most 12.5% more from 128 on, none
// for powers of two), inputs up to a power of two (empty ones), the longest
// input up to a multiple of 64 (the attention's grid). The padding rows belong
// to no input: every op but attention is row by row, and attention reads each
// input's own rows.
EncoderPassShape pass_bucket(const EncoderPassShape& s);

class CudaEncoder : public EncoderExecutor {
 public:
  // `model` must be packed and outlive the encoder; it is uploaded as `type`.
  CudaEncoder(const EncoderModel& model, ElementType type);

  void forward(std::span<const EncoderInput> batch, std::vector<float>& states,
               std::vector<int64_t>& offsets) override;
  // device_used_bytes: what this encoder holds on the device (weights,
  // activation buffers, GEMM workspace), its peak since it only grows.
  ExecutorStats stats() override;
  void enqueue(std::span<const EncoderInput> batch) override { run(batch); }
  void wait() override;
  size_t graph_count() const { return graphs_.size(); }  // passes held as CUDA graphs

 private:
  // The forward pass enqueued on stream_, its states left in x_; returns the packed row offsets.
  std::vector<int64_t> run(std::span<const EncoderInput> batch);
  void reserve(int64_t rows, int seqs);
  void run_layer(const DeviceEncoderLayer& l, int64_t n, int seqs, int max_len);
  // y (+)= x · linear (+ bias, then `epilogue`'s activation) over n rows,
  // through rank_ for a low-rank linear.
  void linear(const EncoderLinear& l, const void* x, int64_t ldx, int64_t n, void* y, int64_t ldy, bool accumulate,
              Epilogue epilogue = Epilogue::bias);
  uint8_t* work(int64_t offset) const;  // element `offset` of work_

  Stream stream_;
  DeviceEncoder weights_;
  Gemm gemm_;
  ElementType type_;
  int64_t rows_ = 0;  // capacity of the activation buffers, in tokens
  int64_t qkv_ld_ = 0, rank_ld_ = 0;
  int64_t attention_dim_ = 0;    // heads x the (padded) head size: q, k, v and attention output columns
  int64_t attention_width_ = 0;  // work_ columns the attention phase needs: q|k|v pack + low-rank parts' outputs
  DeviceBuffer<int32_t> inputs_;  // ids, positions, token types, then the sequence offsets
  DeviceBuffer<uint8_t> x_, rank_, work_;
  std::vector<int32_t> host_inputs_;
  // Graphs of the layers per pass shape (bucketed in bf16), for shapes seen
  // before; cleared when the buffers they read are replaced.
  static constexpr size_t kMaxGraphs = 64, kMaxShapesCounted = 4096;
  std::map<EncoderPassShape, int> passes_;
  std::map<EncoderPassShape, GraphExec> graphs_;
};

}  // namespace fsvd::cuda
