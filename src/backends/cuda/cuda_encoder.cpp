#include "backends/cuda/cuda_encoder.h"

#include <algorithm>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/encoder_ops.h"
#include "backends/cuda/flash_attention.h"
#include "backends/cuda/graph_capture.h"
#include "core/dtype.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

// The head size the attention runs at: the model's, or in bf16 the next one
// the flash kernel takes (zero-padded at upload).
int attention_head_dim(const EncoderConfig& c, ElementType type) {
  const int hd = c.head_dim();
  if (type == ElementType::F32 || prefill_attention_supports({c.n_heads, c.n_heads, hd})) return hd;
  check(hd < 128, "CudaEncoder", "head_dim ", hd, " is not supported by the bf16 attention kernel (at most 128)");
  return hd < 64 ? 64 : 128;
}

Stream make_stream() {
  Stream s;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(s.put(), cudaStreamNonBlocking));
  return s;
}

}  // namespace

// Passes of this many rows or more keep their shape: they are bound by their
// GEMMs, not by launches, so padding would cost more than a graph saves.
constexpr int64_t kMaxBucketRows = 4096;

EncoderPassShape pass_bucket(const EncoderPassShape& s) {
  if (s.rows >= kMaxBucketRows) return s;
  int64_t step = 16;
  while (step * 16 <= s.rows) step *= 2;
  int seqs = 1;
  while (seqs < s.seqs) seqs *= 2;  // < 4096: each input has a row
  return {ceil_div(s.rows, step) * step, seqs, static_cast<int>(ceil_div(s.max_len, 64) * 64)};
}

CudaEncoder::CudaEncoder(const EncoderModel& model, ElementType type)
    : EncoderExecutor(model),
      stream_(make_stream()),
      weights_(model, type, attention_head_dim(model.config, type)),
      gemm_(stream_),
      type_(type) {
  const EncoderConfig& c = model.config;
  attention_dim_ = c.n_heads * weights_.head_pad().padded;
  check(c.hidden % 8 == 0, model.source, "hidden size ", c.hidden, " must be a multiple of 8 on the GPU");
  qkv_ld_ = 0;
  for (const EncoderQkv::Part& p : weights_.layers().front().qkv.parts) qkv_ld_ += round_up8(p.rows);
  for (const DeviceEncoderLayer& l : weights_.layers())
    check(l.qkv.first.rows == qkv_ld_, model.source, "layers differ in their q|k|v pack widths");
  rank_ld_ = round_up8(weights_.max_rank());
  attention_width_ = qkv_ld_;
  for (const DeviceEncoderLayer& l : weights_.layers()) {
    int64_t width = qkv_ld_;
    for (const EncoderQkv::Part& p : l.qkv.parts) width += p.second.data ? attention_dim_ : 0;
    attention_width_ = std::max(attention_width_, width);
  }
}

uint8_t* CudaEncoder::work(int64_t offset) const { return work_.data() + offset * element_bytes(type_); }

void CudaEncoder::reserve(int64_t rows, int seqs) {
  const auto inputs = static_cast<size_t>(3 * rows + seqs + 1);
  if (inputs_.size() < inputs || rows > rows_) graphs_.clear();  // they read the buffers replaced here
  if (inputs_.size() < inputs) inputs_ = DeviceBuffer<int32_t>(inputs);
  if (rows > rows_) {
    const EncoderConfig& c = model().config;
    const size_t e = static_cast<size_t>(element_bytes(type_));
    const auto n = static_cast<size_t>(rows);
    x_ = DeviceBuffer<uint8_t>(n * c.hidden * e);
    rank_ = DeviceBuffer<uint8_t>(n * std::max<int64_t>(rank_ld_, 8) * e);
    work_ = DeviceBuffer<uint8_t>(n * std::max<int64_t>(c.intermediate, attention_width_) * e);
    rows_ = rows;
  }
}

void CudaEncoder::wait() { FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

ExecutorStats CudaEncoder::stats() {
  ExecutorStats st;
  st.device = device_name();
  st.weight_bytes = weights_.bytes();
  st.device_used_bytes = weights_.bytes() + inputs_.bytes() + Gemm::workspace_bytes();
  for (const DeviceBuffer<uint8_t>* b : {&x_, &rank_, &work_})
    st.device_used_bytes += b->bytes();
  return st;
}

void CudaEncoder::linear(const EncoderLinear& l, const void* x, int64_t ldx, int64_t n, void* y, int64_t ldy,
                         bool accumulate, Epilogue epilogue) {
  if (!l.low_rank()) {
    gemm_.run(l.first, x, ldx, n, y, ldy, type_, accumulate, l.bias, epilogue);
    return;
  }
  // The first factor's zero padding rows write zero rank columns up to a
  // multiple of 8, which the second factor's zero padding columns read.
  DeviceMatrix first = l.first;
  first.rows = round_up8(first.rows);
  gemm_.run(first, x, ldx, n, rank_.data(), rank_ld_, type_);
  gemm_.run(padded_k(l.second), rank_.data(), rank_ld_, n, y, ldy, type_, accumulate, l.bias, epilogue);
}

void CudaEncoder::run_layer(const DeviceEncoderLayer& l, int64_t n, int seqs, int max_len) {
  const EncoderConfig& c = model().config;
  const int64_t d = c.hidden, a = attention_dim_;
  // q|k|v: one GEMM for the stacked first factors (dense parts' biases in its
  // epilogue) into the work buffer, then each low-rank part's second factor
  // from its slice into its own [n, hidden] region after it: one batched GEMM
  // when the parts share a shape (their slices then lie equally far apart).
  uint8_t* packed = work(0);
  gemm_.run(l.qkv.first, x_.data(), d, n, packed, qkv_ld_, type_, false, l.qkv.first_bias);
  const void* part_rows[3];
  int64_t part_ld[3];
  int64_t next = n * qkv_ld_;
  const EncoderQkv::Part* parts = l.qkv.parts;
  if (l.qkv.stacked_second.data) {
    gemm_.run_batched(padded_k(parts[0].second), work(parts[0].offset), qkv_ld_, parts[1].offset - parts[0].offset,
                      n, work(next), a, n * a, 3, type_, l.qkv.stacked_bias);
    for (int i = 0; i < 3; ++i) part_rows[i] = work(next + i * n * a), part_ld[i] = a;
  } else {
    for (int i = 0; i < 3; ++i) {
      const void* slice = work(parts[i].offset);
      if (parts[i].second.data) {
        gemm_.run(padded_k(parts[i].second), slice, qkv_ld_, n, work(next), a, type_, false, parts[i].bias);
        part_rows[i] = work(next), part_ld[i] = a;
        next += n * a;
      } else {
        part_rows[i] = slice, part_ld[i] = qkv_ld_;
      }
    }
  }
  // The attention output overwrites q (each query is read before its output is written).
  const int32_t* offsets = inputs_.data() + 3 * n;
  check(part_ld[1] == part_ld[2], model().source, "k and v must be both dense or both low-rank on the GPU");
  void* att = const_cast<void*>(part_rows[0]);
  if (type_ == ElementType::BF16) {
    auto bf16 = [](const void* p) { return static_cast<const __nv_bfloat16*>(p); };
    packed_attention({bf16(part_rows[0]), part_ld[0]}, {bf16(part_rows[1]), part_ld[1]},
                     {bf16(part_rows[2]), part_ld[2]}, offsets, seqs, max_len,
                     {c.n_heads, c.n_heads, static_cast<int>(weights_.head_pad().padded)},
                     {static_cast<__nv_bfloat16*>(att), part_ld[0]}, stream_, c.head_dim());
  } else {
    auto f32 = [](const void* p) { return static_cast<const float*>(p); };
    attention_f32(f32(part_rows[0]), part_ld[0], f32(part_rows[1]), f32(part_rows[2]), part_ld[1], offsets, seqs,
                  max_len, n, c.n_heads, c.head_dim(), static_cast<float*>(att), part_ld[0], stream_);
  }
  // Post-LayerNorm residuals: x = LN(x + o(att)), then x = LN(x + down(gelu(up(x)))).
  linear(l.o, att, part_ld[0], n, x_.data(), d, true);
  layernorm(x_.data(), type_, l.attn_norm.w, l.attn_norm.b, n, d, c.ln_eps, stream_);
  // The MLP's [n, intermediate] activation reuses the work buffer, whose
  // attention-phase contents are spent. bf16: GELU in the up GEMM's epilogue.
  uint8_t* h = work(0);
  const bool fused = type_ == ElementType::BF16;
  linear(l.up, x_.data(), d, n, h, c.intermediate, false, fused ? Epilogue::gelu_bias : Epilogue::bias);
  if (!fused) gelu(h, type_, n * c.intermediate, stream_);
  linear(l.down, h, c.intermediate, n, x_.data(), d, true);
  layernorm(x_.data(), type_, l.mlp_norm.w, l.mlp_norm.b, n, d, c.ln_eps, stream_);
}

std::vector<int64_t> CudaEncoder::run(std::span<const EncoderInput> batch) {
  const EncoderConfig& c = model().config;
  std::vector<int64_t> offsets = check_batch(batch);
  int max_len = 0;
  for (const EncoderInput& in : batch) max_len = std::max(max_len, static_cast<int>(in.ids.size()));
  const EncoderPassShape exact{offsets.back(), static_cast<int>(batch.size()), max_len};
  check(exact.rows <= INT32_MAX / 4, model().source, exact.rows, " tokens in one batch are too many");
  // fp32 passes are for exact checks: no padding (the fp32 attention reads
  // every row, padding included, as part of an input).
  const EncoderPassShape shape = type_ == ElementType::BF16 ? pass_bucket(exact) : exact;
  const int64_t n = shape.rows;
  reserve(n, shape.seqs);
  // ids, positions, token types (padding rows: token 0 at the first
  // position), then the sequence offsets (padding inputs: empty): one copy.
  host_inputs_.assign(static_cast<size_t>(3 * n + shape.seqs + 1), 0);
  for (int64_t r = exact.rows; r < n; ++r) host_inputs_[n + r] = c.position_offset;
  for (int s = 0; s < exact.seqs; ++s) {
    const EncoderInput& in = batch[s];
    for (size_t t = 0; t < in.ids.size(); ++t) {
      const int64_t r = offsets[s] + static_cast<int64_t>(t);
      host_inputs_[r] = in.ids[t];
      host_inputs_[n + r] = c.position_offset + static_cast<int32_t>(t);
      host_inputs_[2 * n + r] = in.type_ids[t];
    }
  }
  for (int s = 0; s <= shape.seqs; ++s)
    host_inputs_[3 * n + s] = static_cast<int32_t>(offsets[std::min(s, exact.seqs)]);
  FSVD_CUDA_CHECK(cudaMemcpyAsync(inputs_.data(), host_inputs_.data(), host_inputs_.size() * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, stream_));
  auto layers = [&] {
    const int32_t* d = inputs_.data();
    embed_layernorm(d, d + n, d + 2 * n, weights_.embeddings(), weights_.embed_norm().w, weights_.embed_norm().b,
                    c.ln_eps, n, x_.data(), stream_);
    for (const DeviceEncoderLayer& l : weights_.layers()) run_layer(l, n, shape.seqs, shape.max_len);
  };
  // A shape's second pass is captured and its later ones replay the graph
  // (a pass launches ~15 kernels a layer, which bounds small batches on the
  // host); the first runs eagerly, choosing the GEMM algorithms.
  if (passes_.size() >= kMaxShapesCounted) passes_.clear();  // a server sees endless shapes
  auto graph = graphs_.find(shape);
  if (graph == graphs_.end() && ++passes_[shape] >= 2 && graphs_.size() < kMaxGraphs) {
    GraphExec exec;
    FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), capture_graph(stream_, layers), 0));
    graph = graphs_.emplace(shape, std::move(exec)).first;
  }
  if (graph != graphs_.end())
    FSVD_CUDA_CHECK(cudaGraphLaunch(graph->second, stream_));
  else
    layers();
  return offsets;
}

void CudaEncoder::forward(std::span<const EncoderInput> batch, std::vector<float>& states,
                          std::vector<int64_t>& offsets) {
  offsets = run(batch);
  const int64_t count = offsets.back() * model().config.hidden;
  states.resize(static_cast<size_t>(count));
  if (type_ == ElementType::F32) {
    FSVD_CUDA_CHECK(cudaMemcpyAsync(states.data(), x_.data(), count * 4, cudaMemcpyDeviceToHost, stream_));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  std::vector<uint16_t> raw(static_cast<size_t>(count));
  FSVD_CUDA_CHECK(cudaMemcpyAsync(raw.data(), x_.data(), count * 2, cudaMemcpyDeviceToHost, stream_));
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::transform(raw.begin(), raw.end(), states.begin(), bf16_to_f32);
}

}  // namespace fsvd::cuda
