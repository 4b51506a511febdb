#include "backends/cuda/device_model.h"

#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/synthetic_weights.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "DeviceModel";

// rows x cols fp32 (row-major, contiguous) as `type` rows of stride ld at
// dst; padding is zero.
void convert_rows(const float* src, int64_t rows, int64_t cols, int64_t ld, ElementType type, uint8_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    if (type == ElementType::F32) {
      std::memcpy(dst + r * ld * 4, src + r * cols, static_cast<size_t>(cols) * 4);
    } else {
      auto* row = reinterpret_cast<uint16_t*>(dst) + r * ld;
      for (int64_t c = 0; c < cols; ++c) row[c] = f32_to_bf16(src[r * cols + c]);
    }
  }
}

// The parts as views of the slices of d.stacked_second.
void view_stacked_seconds(DevicePacked& d) {
  const int64_t n = d.stacked_second.rows / static_cast<int64_t>(d.parts.size());
  for (size_t i = 0; i < d.parts.size(); ++i) d.parts[i].second = row_slice(d.stacked_second, i * n, (i + 1) * n);
}

}  // namespace

DeviceMatrix DeviceModel::allocate_matrix(int64_t rows, int64_t cols, int64_t ld) {
  // Rows and columns are padded with zeros to multiples of 8: the prefill
  // GEMMs read the padding (padded_rows, padded_k in prefill.cpp).
  DeviceBuffer<uint8_t> buf(static_cast<size_t>(round_up8(rows) * ld * element_bytes(type_)));
  FSVD_CUDA_CHECK(cudaMemset(buf.data(), 0, buf.bytes()));
  bytes_ += buf.bytes();
  const DeviceMatrix m{buf.data(), rows, cols, ld, type_};
  matrix_buffers_.push_back(std::move(buf));
  return m;
}

float* DeviceModel::allocate_vector(int64_t n) {
  DeviceBuffer<float> buf(static_cast<size_t>(n));
  bytes_ += buf.bytes();
  float* p = buf.data();
  f32_.push_back(std::move(buf));
  return p;
}

DeviceMatrix DeviceModel::upload_rows(const std::vector<const Tensor*>& blocks, int64_t ld) {
  const Tensor& top = **blocks.begin();
  check(!top.empty() && top.ndim() == 2, kWhere, "expected a matrix, got shape ", top.shape_str());
  int64_t rows = 0;
  for (const Tensor* t : blocks) {
    check(t->ndim() == 2 && t->dim(1) == top.dim(1), kWhere, "cannot stack ", t->shape_str(), " under ",
          top.shape_str());
    rows += t->dim(0);
  }
  const Key key{top.data(), (*(blocks.end() - 1))->data(), rows, top.dim(1), ld};
  if (auto it = matrices_.find(key); it != matrices_.end()) return it->second;
  const int64_t row_bytes = ld * element_bytes(type_);
  std::vector<uint8_t> host(static_cast<size_t>(rows * row_bytes), 0);
  int64_t row0 = 0;
  for (const Tensor* t : blocks) {
    convert_rows(t->data(), t->dim(0), t->dim(1), ld, type_, host.data() + row0 * row_bytes);
    row0 += t->dim(0);
  }
  const DeviceMatrix m = allocate_matrix(rows, top.dim(1), ld);
  matrix_buffers_.back().upload(host);
  return matrices_[key] = m;
}

DeviceMatrix DeviceModel::upload_matrix(const Tensor& t) {
  check(!t.empty() && t.ndim() == 2, kWhere, "expected a matrix, got shape ", t.shape_str());
  return upload_rows({&t}, round_up8(t.dim(1)));
}

const float* DeviceModel::upload_vector(const Tensor& t) {
  if (t.empty()) return nullptr;
  if (auto it = vectors_.find(t.data()); it != vectors_.end()) return it->second;
  const float* p = allocate_vector(t.numel());
  f32_.back().upload(std::span<const float>(t.data(), static_cast<size_t>(t.numel())));
  return vectors_[t.data()] = p;
}

DeviceLinear DeviceModel::upload_linear(const Linear& l) {
  DeviceLinear d;
  d.first = upload_matrix(l.first);
  if (l.low_rank()) d.second = upload_matrix(l.second);
  d.bias = upload_vector(l.bias);
  return d;
}

DevicePacked DeviceModel::upload_packed(const PackedLinear& p) {
  check(!p.first.empty() && p.first.ndim() == 2, kWhere, "expected a packed matrix, got shape ",
        p.first.shape_str());
  DevicePacked d;
  const bool stack = p.parts.size() > 1 && std::all_of(p.parts.begin(), p.parts.end(), [&](const auto& part) {
    return !part.second.empty() && part.bias.empty() && part.second.shape() == p.parts[0].second.shape();
  });
  int64_t rows = 0;
  std::vector<const Tensor*> seconds;
  for (const PackedLinear::Part& part : p.parts) {
    DevicePacked::Part& out = d.parts.emplace_back();
    out.offset = rows;
    out.rows = part.rows;
    if (stack) seconds.push_back(&part.second);
    else if (!part.second.empty()) out.second = upload_matrix(part.second);
    out.bias = upload_vector(part.bias);
    rows += round_up8(part.rows);
  }
  if (stack) {
    d.stacked_second = upload_rows(seconds, round_up8(seconds[0]->dim(1)));
    view_stacked_seconds(d);
  }
  // The parts' rows of the host's stack, each part moved to its spaced offset
  // (uploaded once per stack: layers of a shared-basis group share it). The
  // null second field keeps the key apart from upload_rows' keys.
  const int64_t cols = p.first.dim(1), ld = round_up8(cols);
  const Key key{p.first.data(), nullptr, rows, cols, ld};
  if (auto it = matrices_.find(key); it != matrices_.end()) {
    d.first = it->second;
    return d;
  }
  const int64_t row_bytes = ld * element_bytes(type_);
  std::vector<uint8_t> host(static_cast<size_t>(rows * row_bytes), 0);
  for (size_t i = 0; i < p.parts.size(); ++i)
    convert_rows(p.first.data() + p.parts[i].offset * cols, p.parts[i].rows, cols, ld, type_,
                 host.data() + d.parts[i].offset * row_bytes);
  d.first = allocate_matrix(rows, cols, ld);
  matrix_buffers_.back().upload(host);
  matrices_[key] = d.first;
  return d;
}

DeviceModel::DeviceModel(const Model& model, ElementType type)
    : type_(type), config_(model.config), source_(model.source) {
  const ModelConfig& c = model.config;
  model.validate_packed("uploading");
  // The embedding gather reads rows of stride hidden; a tied lm_head shares
  // this upload whenever hidden is already a multiple of 8.
  embed_ = upload_rows({&model.embed}, c.hidden);
  final_norm_ = upload_vector(model.final_norm);
  lm_head_ = upload_linear(model.lm_head);
  for (const Layer& l : model.layers) {
    DeviceLayer& d = layers_.emplace_back();
    d.attn_norm = upload_vector(l.attn_norm);
    d.mlp_norm = upload_vector(l.mlp_norm);
    d.qkv = upload_packed(l.qkv);
    d.gate_up = upload_packed(l.gate_up);
    d.o = upload_linear(l.o);
    d.down = upload_linear(l.down);
  }
}

// The synthetic builders mirror the Model path above: the same packed layout,
// filled by kernels instead of uploads.
void DeviceModel::fill_matrix(const DeviceMatrix& m, int64_t row0, int64_t rows, uint32_t tensor, float scale) {
  // This object owns every matrix it hands out, so writing through it is its right.
  auto* p = static_cast<uint8_t*>(const_cast<void*>(m.data)) + row0 * m.ld * element_bytes(m.type);
  fill_synthetic(p, m.type, rows, m.cols, m.ld, seed_, tensor, scale, nullptr);
}

DevicePacked DeviceModel::synthetic_packed(const SyntheticSpec& spec, int layer, int64_t in,
                                           std::initializer_list<SyntheticPart> parts_list) {
  const std::vector<SyntheticPart> parts(parts_list);
  DevicePacked d;
  std::vector<int64_t> ranks;  // < 0: dense
  int64_t total = 0;
  for (const SyntheticPart& p : parts) {
    const int64_t r = spec.rank(layer, p.w, p.out, in), rows = r < 0 ? p.out : r;
    ranks.push_back(r);
    d.parts.push_back({total, rows, DeviceMatrix{}, nullptr});
    total += round_up8(rows);
  }
  // Stacked as upload_packed would (synthetic weights have no biases): every
  // part low-rank, of the first's rank and output size.
  bool stack = parts.size() > 1;
  for (size_t i = 0; i < parts.size(); ++i)
    stack = stack && ranks[i] >= 0 && ranks[i] == ranks[0] && parts[i].out == parts[0].out;
  d.first = allocate_matrix(total, in, round_up8(in));
  if (stack) {
    d.stacked_second = allocate_matrix(static_cast<int64_t>(parts.size()) * parts[0].out, ranks[0], round_up8(ranks[0]));
    view_stacked_seconds(d);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    DevicePacked::Part& part = d.parts[i];
    const SyntheticPart& p = parts[i];
    fill_matrix(d.first, part.offset, part.rows, synthetic_tensor_id(layer, p.w, 0), synthetic_scale(in));
    if (ranks[i] < 0) continue;
    if (!stack) part.second = allocate_matrix(p.out, part.rows, round_up8(part.rows));
    fill_matrix(part.second, 0, p.out, synthetic_tensor_id(layer, p.w, 1), synthetic_scale(part.rows));
  }
  return d;
}

DeviceLinear DeviceModel::synthetic_linear(const SyntheticSpec& spec, int layer, SyntheticWeight w, int64_t out,
                                           int64_t in) {
  const DevicePacked p = synthetic_packed(spec, layer, in, {{w, out}});
  return DeviceLinear{p.first, p.parts[0].second, nullptr};
}

DeviceModel::DeviceModel(const SyntheticSpec& spec, ElementType type)
    : type_(type), seed_(spec.seed), config_(spec.config), source_("synthetic " + spec.name) {
  const ModelConfig& c = config_;
  c.validate(source_);
  using W = SyntheticWeight;
  embed_ = allocate_matrix(c.vocab, c.hidden, c.hidden);
  fill_matrix(embed_, 0, c.vocab, kSyntheticEmbed, 1.0f);
  auto norm = [&](uint32_t id) {
    float* p = allocate_vector(c.hidden);
      fill_synthetic(p, c.hidden, seed_, id, kSyntheticNormSpread, true, nullptr);
    return p;
  };
  final_norm_ = norm(kSyntheticFinalNorm);
  if (c.tied_embeddings && c.hidden % 8 == 0) {
    lm_head_.first = embed_;
  } else {
    lm_head_.first = allocate_matrix(c.vocab, c.hidden, round_up8(c.hidden));
    fill_matrix(lm_head_.first, 0, c.vocab, c.tied_embeddings ? kSyntheticEmbed : kSyntheticLmHead,
                c.tied_embeddings ? 1.0f : synthetic_scale(c.hidden));
  }
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  for (int i = 0; i < c.n_layers; ++i) {
    DeviceLayer& d = layers_.emplace_back();
    d.attn_norm = norm(synthetic_tensor_id(i, W::attn_norm, 0));
    d.mlp_norm = norm(synthetic_tensor_id(i, W::mlp_norm, 0));
    d.qkv = synthetic_packed(spec, i, c.hidden, {{W::q, q_dim}, {W::k, kv_dim}, {W::v, kv_dim}});
    d.gate_up = synthetic_packed(spec, i, c.hidden, {{W::gate, c.intermediate}, {W::up, c.intermediate}});
    d.o = synthetic_linear(spec, i, W::o, c.hidden, q_dim);
    d.down = synthetic_linear(spec, i, W::down, c.hidden, c.intermediate);
  }
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace fsvd::cuda
