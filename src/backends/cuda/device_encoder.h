#pragma once
// An EncoderModel's weights on the GPU, all in one element type (bf16, or
// fp32 for exact checks): matrices row-major with rows and row strides
// rounded up to 8, the padding zero, so every GEMM's K is a multiple of 8
// (cuBLASLt's fast kernels need it: a rank of 307 would not be), biases in the same type (the GEMM
// epilogue adds them), LayerNorm gains and shifts in fp32. q|k|v first
// factors stay stacked as EncoderModel::pack() built them, each part at a
// multiple of 8 rows, so the attention reads dense parts' outputs in place.
// Heads may be padded with zeros to a size the bf16 attention kernel takes
// (HeadPad: MiniLM's 32 to 64): q, k, v rows and o's columns move to their
// padded places at upload, so zero q·k terms and zero output columns change
// nothing but the work.
#include <cstdint>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_matrix.h"
#include "backends/cuda/encoder_ops.h"
#include "model/encoder.h"

namespace fsvd::cuda {

struct EncoderLinear {
  DeviceMatrix first;   // [r, in] or [out, in] (dense)
  DeviceMatrix second;  // [out, r]; data null when dense
  const void* bias = nullptr;  // [out] of the matrices' type, or null
  bool low_rank() const { return second.data != nullptr; }
  int64_t out() const { return low_rank() ? second.rows : first.rows; }
};

struct EncoderQkv {
  DeviceMatrix first;              // the parts' first factors (or dense matrices), stacked
  const void* first_bias = nullptr;  // the dense parts' biases at their rows, zeros elsewhere; null: none
  struct Part {
    int64_t offset = 0, rows = 0;  // this part's rows of first's output (offset: a multiple of 8)
    DeviceMatrix second;           // data null when the part is dense
    const void* bias = nullptr;    // added by the second factor (low-rank parts)
  };
  Part parts[3];
  // When the three parts are low-rank with one shape (and all or none have a
  // bias): their second factors stacked, part i at rows [i * out, (i + 1) *
  // out) (parts[i].second are those slices), and their biases likewise, so
  // one strided-batched GEMM runs all three. data null otherwise.
  DeviceMatrix stacked_second;
  const void* stacked_bias = nullptr;
};

struct EncoderNorm {
  const float* w = nullptr;
  const float* b = nullptr;
};

// The attention's head size in the model and as uploaded (>= head_dim).
struct HeadPad {
  int64_t head_dim = 0, padded = 0;
};

struct DeviceEncoderLayer {
  EncoderQkv qkv;
  EncoderLinear o, up, down;
  EncoderNorm attn_norm, mlp_norm;
};

class DeviceEncoder {
 public:
  // `model` must be packed; it is only read here. Heads are uploaded padded
  // to `padded_head_dim` (>= the model's).
  DeviceEncoder(const EncoderModel& model, ElementType type, int padded_head_dim);
  ElementType type() const { return type_; }
  const HeadPad& head_pad() const { return pad_; }
  const EmbeddingTables& embeddings() const { return embeddings_; }
  const EncoderNorm& embed_norm() const { return embed_norm_; }
  const std::vector<DeviceEncoderLayer>& layers() const { return layers_; }
  size_t bytes() const { return bytes_; }
  int64_t max_rank() const { return max_rank_; }  // widest o/up/down rank (0: all dense)

 private:
  DeviceMatrix matrix(const Tensor& t);
  const void* vector(const Tensor& t);  // the matrices' type; null when empty
  const float* f32(const Tensor& t);
  EncoderLinear linear(const Linear& l);
  EncoderQkv qkv(const PackedLinear& p);
  void* allocate(size_t bytes);

  ElementType type_;
  HeadPad pad_;
  std::vector<DeviceBuffer<uint8_t>> buffers_;
  size_t bytes_ = 0;
  int64_t max_rank_ = 0;
  EmbeddingTables embeddings_;
  EncoderNorm embed_norm_;
  std::vector<DeviceEncoderLayer> layers_;
};

}  // namespace fsvd::cuda
