#include "backends/cuda/device_model.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "DeviceModel";

int64_t round_up8(int64_t n) { return (n + 7) / 8 * 8; }

// A 1-D tensor as one row.
int64_t rows_of(const Tensor& t) { return t.ndim() == 2 ? t.dim(0) : 1; }
int64_t cols_of(const Tensor& t) { return t.ndim() == 2 ? t.dim(1) : t.dim(0); }

// rows x cols fp32 (row-major, contiguous) to bf16 rows of stride ld; padding is zero.
void to_bf16_rows(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * ld + c] = f32_to_bf16(src[r * cols + c]);
}

}  // namespace

Bf16Matrix DeviceModel::upload_matrix(const Tensor& t, int64_t ld) {
  check(!t.empty() && t.ndim() == 2, kWhere, "expected a matrix, got shape ", t.shape_str());
  const Key key{t.data(), t.dim(0), t.dim(1), ld};
  if (auto it = matrices_.find(key); it != matrices_.end()) return it->second;
  std::vector<uint16_t> host(static_cast<size_t>(t.dim(0) * ld), 0);
  to_bf16_rows(t.data(), t.dim(0), t.dim(1), ld, host.data());
  DeviceBuffer<uint16_t> buf(host.size());
  buf.upload(host);
  bytes_ += buf.bytes();
  const Bf16Matrix m{reinterpret_cast<const __nv_bfloat16*>(buf.data()), t.dim(0), t.dim(1), ld};
  bf16_.push_back(std::move(buf));
  return matrices_[key] = m;
}

Bf16Matrix DeviceModel::upload_matrix(const Tensor& t) {
  check(!t.empty() && t.ndim() == 2, kWhere, "expected a matrix, got shape ", t.shape_str());
  return upload_matrix(t, round_up8(t.dim(1)));
}

Bf16Matrix DeviceModel::upload_stacked(const Tensor& top, const Tensor& bottom) {
  check(top.ndim() == 2 && bottom.ndim() == 2 && top.shape() == bottom.shape(), kWhere,
        "cannot stack ", top.shape_str(), " over ", bottom.shape_str());
  const std::pair key{top.data(), bottom.data()};
  if (auto it = stacked_.find(key); it != stacked_.end()) return it->second;
  const int64_t rows = top.dim(0), cols = top.dim(1), ld = round_up8(cols);
  std::vector<uint16_t> host(static_cast<size_t>(2 * rows * ld), 0);
  to_bf16_rows(top.data(), rows, cols, ld, host.data());
  to_bf16_rows(bottom.data(), rows, cols, ld, host.data() + rows * ld);
  DeviceBuffer<uint16_t> buf(host.size());
  buf.upload(host);
  bytes_ += buf.bytes();
  const Bf16Matrix m{reinterpret_cast<const __nv_bfloat16*>(buf.data()), 2 * rows, cols, ld};
  bf16_.push_back(std::move(buf));
  return stacked_[key] = m;
}

const float* DeviceModel::upload_vector(const Tensor& t) {
  if (t.empty()) return nullptr;
  const Key key{t.data(), rows_of(t), cols_of(t), cols_of(t)};
  if (auto it = vectors_.find(key); it != vectors_.end()) return it->second;
  DeviceBuffer<float> buf(static_cast<size_t>(t.numel()));
  buf.upload(std::span<const float>(t.data(), static_cast<size_t>(t.numel())));
  bytes_ += buf.bytes();
  const float* p = buf.data();
  f32_.push_back(std::move(buf));
  return vectors_[key] = p;
}

DeviceLinear DeviceModel::upload_linear(const Linear& l) {
  DeviceLinear d;
  d.first = upload_matrix(l.first);
  if (l.low_rank()) d.second = upload_matrix(l.second);
  d.bias = upload_vector(l.bias);
  return d;
}

DevicePacked DeviceModel::upload_packed(const PackedLinear& p) {
  DevicePacked d;
  d.first = upload_matrix(p.first);
  for (const PackedLinear::Part& part : p.parts) {
    DevicePacked::Part& out = d.parts.emplace_back();
    out.offset = part.offset;
    out.rows = part.rows;
    if (!part.second.empty()) out.second = upload_matrix(part.second);
    out.bias = upload_vector(part.bias);
  }
  return d;
}

DeviceModel::DeviceModel(const Model& model) {
  const ModelConfig& c = model.config;
  model.validate_packed("uploading");
  // The embedding gather reads rows of stride hidden; a tied lm_head shares
  // this upload whenever hidden is already a multiple of 8.
  embed_ = upload_matrix(model.embed, c.hidden).data;
  final_norm_ = upload_vector(model.final_norm);
  lm_head_ = upload_linear(model.lm_head);
  for (const Layer& l : model.layers) {
    DeviceLayer& d = layers_.emplace_back();
    d.attn_norm = upload_vector(l.attn_norm);
    d.mlp_norm = upload_vector(l.mlp_norm);
    d.qkv = upload_packed(l.qkv);
    const PackedLinear::Part &gate = l.gate_up.parts[0], &up = l.gate_up.parts[1];
    // Fused silu(gate)·up needs both second factors as one [gate; up] matrix;
    // otherwise each part keeps its own upload.
    if (!gate.second.empty() && !up.second.empty() && gate.second.shape() == up.second.shape() &&
        gate.bias.empty() && up.bias.empty()) {
      d.gate_up.first = upload_matrix(l.gate_up.first);
      for (const PackedLinear::Part* p : {&gate, &up})
        d.gate_up.parts.push_back({p->offset, p->rows, Bf16Matrix{}, nullptr});
      d.gate_up_second = upload_stacked(gate.second, up.second);
    } else {
      d.gate_up = upload_packed(l.gate_up);
    }
    d.o = upload_linear(l.o);
    d.down = upload_linear(l.down);
  }
}

}  // namespace fsvd::cuda
