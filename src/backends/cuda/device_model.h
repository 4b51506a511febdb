#pragma once
// A packed Model's weights uploaded once to the GPU for the decode path:
// matrices as bf16 with rows padded to a multiple of 8 (the GEMV layout
// contract, gemv.h), norms and biases as fp32. Storage shared on the host
// (packed factors, shared bases, tied embeddings) is uploaded once.
#include <cuda_bf16.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gemv.h"
#include "model/model.h"

namespace fsvd::cuda {

// Empty (data == nullptr) when absent.
struct DeviceLinear {
  Bf16Matrix first;   // [r, in] or [out, in] (dense)
  Bf16Matrix second;  // [out, r]; empty when dense
  const float* bias = nullptr;
  bool low_rank() const { return second.data != nullptr; }
};

struct DevicePacked {
  Bf16Matrix first;  // stacked first factors of the parts
  struct Part {
    int64_t offset = 0, rows = 0;  // this part's rows of `first`'s output
    Bf16Matrix second;             // empty when the part is dense
    const float* bias = nullptr;
  };
  std::vector<Part> parts;
};

struct DeviceLayer {
  const float* attn_norm = nullptr;
  const float* mlp_norm = nullptr;
  DevicePacked qkv, gate_up;
  // [gate second; up second] as one matrix when both are low-rank of one rank,
  // so one gemv_silu_mul computes silu(gate)·up; empty otherwise.
  Bf16Matrix gate_up_second;
  DeviceLinear o, down;
};

class DeviceModel {
 public:
  // `model` must be packed (Model::pack); it is only read during construction.
  explicit DeviceModel(const Model& model);

  const __nv_bfloat16* embed() const { return embed_; }  // [vocab, hidden], row stride hidden
  const float* final_norm() const { return final_norm_; }
  const DeviceLinear& lm_head() const { return lm_head_; }
  const std::vector<DeviceLayer>& layers() const { return layers_; }
  // Device bytes of all weights, each shared storage counted once.
  size_t bytes_uploaded() const { return bytes_; }

 private:
  // (host data, rows, cols, row stride) of a matrix or vector already uploaded.
  using Key = std::tuple<const float*, int64_t, int64_t, int64_t>;
  Bf16Matrix upload_matrix(const Tensor& t, int64_t ld);
  Bf16Matrix upload_matrix(const Tensor& t);  // ld = cols rounded up to 8
  Bf16Matrix upload_stacked(const Tensor& top, const Tensor& bottom);
  const float* upload_vector(const Tensor& t);  // nullptr for an empty tensor
  DeviceLinear upload_linear(const Linear& l);
  DevicePacked upload_packed(const PackedLinear& p);

  std::vector<DeviceBuffer<uint16_t>> bf16_;
  std::vector<DeviceBuffer<float>> f32_;
  std::map<Key, Bf16Matrix> matrices_;
  std::map<Key, const float*> vectors_;
  std::map<std::pair<const float*, const float*>, Bf16Matrix> stacked_;
  size_t bytes_ = 0;

  const __nv_bfloat16* embed_ = nullptr;
  const float* final_norm_ = nullptr;
  DeviceLinear lm_head_;
  std::vector<DeviceLayer> layers_;
};

}  // namespace fsvd::cuda
