#pragma once
// A model's weights on the GPU, in the packed layout the decode path reads:
// matrices as bf16 (or fp32, for exact checks) with rows padded with zeros to
// a multiple of 8 values (the GEMV layout contract, gemv.h) and zero rows
// allocated up to a multiple of 8 (the prefill GEMMs read both paddings), norms and biases as fp32. Either
// uploaded once from a packed host Model (storage shared on the host — packed
// factors, shared bases, tied embeddings — is uploaded once) or generated in
// place for a synthetic model (model/synthetic.h).
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_matrix.h"
#include "model/model.h"
#include "model/synthetic.h"

namespace fsvd::cuda {

// Empty (data == nullptr) when absent.
struct DeviceLinear {
  DeviceMatrix first;   // [r, in] or [out, in] (dense)
  DeviceMatrix second;  // [out, r]; empty when dense
  const float* bias = nullptr;
  bool low_rank() const { return second.data != nullptr; }
  int64_t out() const { return low_rank() ? second.rows : first.rows; }
};

struct DevicePacked {
  DeviceMatrix first;  // stacked first factors of the parts, each starting at a multiple of 8 rows
  struct Part {
    int64_t offset = 0, rows = 0;  // this part's rows of `first`'s output (offset: a multiple of 8)
    DeviceMatrix second;           // empty when the part is dense
    const float* bias = nullptr;
  };
  std::vector<Part> parts;
  // When two or more parts are all low-rank of one shape without biases
  // (gate and up; q, k and v of a model without grouped heads): their second
  // factors as one matrix, part i at rows [i * out, (i + 1) * out) (the parts'
  // `second` view those slices), so the GEMM path runs them as one batched
  // GEMM. Empty otherwise.
  DeviceMatrix stacked_second;
};

struct DeviceLayer {
  const float* attn_norm = nullptr;
  const float* mlp_norm = nullptr;
  DevicePacked qkv, gate_up;
  DeviceLinear o, down;
};

class DeviceModel {
 public:
  // `model` must be packed (Model::pack); it is only read during construction.
  explicit DeviceModel(const Model& model, ElementType type = ElementType::BF16);
  // The weights of make_synthetic_model(spec), built on the device.
  explicit DeviceModel(const SyntheticSpec& spec, ElementType type = ElementType::BF16);

  const ModelConfig& config() const { return config_; }
  const std::string& source() const { return source_; }
  ElementType type() const { return type_; }
  const DeviceMatrix& embed() const { return embed_; }  // [vocab, hidden], row stride hidden
  const float* final_norm() const { return final_norm_; }
  const DeviceLinear& lm_head() const { return lm_head_; }
  const std::vector<DeviceLayer>& layers() const { return layers_; }
  // Device bytes of all weights, each shared storage counted once.
  size_t bytes_uploaded() const { return bytes_; }

 private:
  DeviceMatrix allocate_matrix(int64_t rows, int64_t cols, int64_t ld);
  float* allocate_vector(int64_t n);
  // The row blocks stacked into one matrix of row stride ld (uploaded once per
  // distinct stack).
  DeviceMatrix upload_rows(const std::vector<const Tensor*>& blocks, int64_t ld);
  DeviceMatrix upload_matrix(const Tensor& t);  // ld = cols rounded up to 8
  const float* upload_vector(const Tensor& t);  // nullptr for an empty tensor
  DeviceLinear upload_linear(const Linear& l);
  // Each part's rows start at a multiple of 8 (zero rows between), so its
  // slice of the packed output is where prefill's second factor reads it as
  // bf16; second factors stacked where DevicePacked::stacked_second says.
  DevicePacked upload_packed(const PackedLinear& p);

  // Synthetic weights: rows [row0, row0 + rows) of m get tensor `tensor`'s values.
  void fill_matrix(const DeviceMatrix& m, int64_t row0, int64_t rows, uint32_t tensor, float scale);
  struct SyntheticPart {
    SyntheticWeight w;
    int64_t out;
  };
  // Parts reading one input of width `in`, first factors stacked, second
  // factors as upload_packed lays them out.
  DevicePacked synthetic_packed(const SyntheticSpec& spec, int layer, int64_t in,
                                std::initializer_list<SyntheticPart> parts);
  DeviceLinear synthetic_linear(const SyntheticSpec& spec, int layer, SyntheticWeight w, int64_t out,
                                int64_t in);

  ElementType type_;
  uint64_t seed_ = 0;  // of a synthetic model
  ModelConfig config_;
  std::string source_;

  std::vector<DeviceBuffer<uint8_t>> matrix_buffers_;
  std::vector<DeviceBuffer<float>> f32_;
  // (first block's data, last block's data, rows, cols, row stride) of an uploaded matrix.
  using Key = std::tuple<const float*, const float*, int64_t, int64_t, int64_t>;
  std::map<Key, DeviceMatrix> matrices_;
  std::map<const float*, const float*> vectors_;
  size_t bytes_ = 0;

  DeviceMatrix embed_;
  const float* final_norm_ = nullptr;
  DeviceLinear lm_head_;
  std::vector<DeviceLayer> layers_;
};

}  // namespace fsvd::cuda
