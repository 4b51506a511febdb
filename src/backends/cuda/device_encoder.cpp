#include "backends/cuda/device_encoder.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/gemm.h"
#include "core/dtype.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

// n fp32 values as `type` at dst.
void convert(const float* src, int64_t n, ElementType type, uint8_t* dst) {
  if (type == ElementType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  auto* out = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(src[i]);
}

// Head padding (HeadPad): feature i = h * head_dim + j of the attention's
// q/k/v/output moves to h * padded + j; the features between are zero.
int64_t padded_index(int64_t i, const HeadPad& pad) { return i / pad.head_dim * pad.padded + i % pad.head_dim; }

// Rows [row0, row0 + rows) of t ([*, cols], or a vector when cols == 1), as
// a [heads * padded, cols] tensor with each row at its padded index.
Tensor pad_rows(const Tensor& t, int64_t row0, int64_t rows, const HeadPad& pad) {
  const int64_t cols = t.ndim() == 2 ? t.dim(1) : 1, heads = rows / pad.head_dim;
  Tensor out(t.ndim() == 2 ? std::vector<int64_t>{heads * pad.padded, cols} : std::vector<int64_t>{heads * pad.padded});
  for (int64_t r = 0; r < rows; ++r)
    std::copy(t.data() + (row0 + r) * cols, t.data() + (row0 + r + 1) * cols,
              out.data() + padded_index(r, pad) * cols);
  return out;
}

// t [rows, heads * head_dim] with each column at its padded index.
Tensor pad_cols(const Tensor& t, const HeadPad& pad) {
  const int64_t rows = t.dim(0), cols = t.dim(1), width = cols / pad.head_dim * pad.padded;
  Tensor out({rows, width});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out.data()[r * width + padded_index(c, pad)] = t.data()[r * cols + c];
  return out;
}

}  // namespace

void* DeviceEncoder::allocate(size_t bytes) {
  DeviceBuffer<uint8_t> buf(bytes);
  bytes_ += buf.bytes();
  void* p = buf.data();
  buffers_.push_back(std::move(buf));
  return p;
}

DeviceMatrix DeviceEncoder::matrix(const Tensor& t) {
  check(t.ndim() == 2 && !t.empty(), "DeviceEncoder", "expected a matrix, got ", t.shape_str());
  const int64_t rows = t.dim(0), cols = t.dim(1), ld = round_up8(cols), eb = element_bytes(type_);
  std::vector<uint8_t> host(static_cast<size_t>(round_up8(rows) * ld * eb), 0);
  for (int64_t r = 0; r < rows; ++r) convert(t.data() + r * cols, cols, type_, host.data() + r * ld * eb);
  void* p = allocate(host.size());
  FSVD_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice));
  return {p, rows, cols, ld, type_};
}

const void* DeviceEncoder::vector(const Tensor& t) {
  if (t.empty()) return nullptr;
  std::vector<uint8_t> host(static_cast<size_t>(t.numel() * element_bytes(type_)));
  convert(t.data(), t.numel(), type_, host.data());
  void* p = allocate(host.size());
  FSVD_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice));
  return p;
}

const float* DeviceEncoder::f32(const Tensor& t) {
  auto* p = static_cast<float*>(allocate(static_cast<size_t>(t.numel()) * 4));
  FSVD_CUDA_CHECK(cudaMemcpy(p, t.data(), static_cast<size_t>(t.numel()) * 4, cudaMemcpyHostToDevice));
  return p;
}

EncoderLinear DeviceEncoder::linear(const Linear& l) {
  EncoderLinear d;
  d.first = matrix(l.first);
  if (l.low_rank()) {
    d.second = matrix(l.second);
    max_rank_ = std::max(max_rank_, l.rank());
  }
  d.bias = vector(l.bias);
  return d;
}

EncoderQkv DeviceEncoder::qkv(const PackedLinear& p) {
  check(p.parts.size() == 3, "DeviceEncoder", "q|k|v pack of ", p.parts.size(), " parts");
  EncoderQkv d;
  const int64_t in = p.first.dim(1);
  // Each part's first-factor rows (a dense part's padded per head) and where they go.
  Tensor blocks[3];
  int64_t rows = 0;
  for (size_t i = 0; i < 3; ++i) {
    const PackedLinear::Part& part = p.parts[i];
    blocks[i] = part.second.empty() && pad_.padded != pad_.head_dim
                    ? pad_rows(p.first, part.offset, part.rows, pad_)
                    : Tensor({part.rows, in}, std::vector<float>(p.first.data() + part.offset * in,
                                                                 p.first.data() + (part.offset + part.rows) * in));
    d.parts[i].offset = rows;
    d.parts[i].rows = blocks[i].dim(0);
    rows += round_up8(d.parts[i].rows);
  }
  // The stack re-spaced so every part starts at a multiple of 8 rows; the
  // dense parts' biases at their rows of one vector for the first GEMM; the
  // low-rank parts' second factors and biases, in order.
  Tensor spaced({rows, in}), first_bias({rows});
  bool dense_bias = false;
  auto padded = [&](const Tensor& t) { return pad_.padded != pad_.head_dim ? pad_rows(t, 0, t.dim(0), pad_) : t; };
  std::vector<Tensor> seconds, biases;
  for (size_t i = 0; i < 3; ++i) {
    const PackedLinear::Part& part = p.parts[i];
    std::copy(blocks[i].data(), blocks[i].data() + blocks[i].numel(), spaced.data() + d.parts[i].offset * in);
    if (!part.second.empty()) {
      seconds.push_back(padded(part.second));
      biases.push_back(part.bias.empty() ? Tensor() : padded(part.bias));
    } else if (!part.bias.empty()) {
      const Tensor b = padded(part.bias);
      std::copy(b.data(), b.data() + b.numel(), first_bias.data() + d.parts[i].offset);
      dense_bias = true;
    }
  }
  // Three low-rank parts of one shape, all with biases or none: stacked
  // (EncoderQkv::stacked_second); otherwise one upload each.
  const bool stack = seconds.size() == 3 && std::all_of(seconds.begin(), seconds.end(), [&](const Tensor& t) {
                       return t.shape() == seconds[0].shape();
                     }) && std::all_of(biases.begin(), biases.end(), [&](const Tensor& b) {
                       return b.empty() == biases[0].empty();
                     });
  if (stack) {
    const int64_t out = seconds[0].dim(0);
    d.stacked_second = matrix(concat_rows(seconds));
    if (!biases[0].empty()) {
      Tensor stacked({3 * out});
      for (size_t i = 0; i < 3; ++i) std::copy(biases[i].data(), biases[i].data() + out, stacked.data() + i * out);
      d.stacked_bias = vector(stacked);
    }
    for (size_t i = 0; i < 3; ++i) {
      d.parts[i].second = row_slice(d.stacked_second, i * out, (i + 1) * out);
      if (d.stacked_bias)
        d.parts[i].bias = static_cast<const uint8_t*>(d.stacked_bias) + i * out * element_bytes(type_);
    }
  } else {
    size_t j = 0;  // the next low-rank part's
    for (size_t i = 0; i < 3; ++i) {
      if (p.parts[i].second.empty()) continue;
      d.parts[i].second = matrix(seconds[j]);
      d.parts[i].bias = vector(biases[j]);
      ++j;
    }
  }
  d.first = matrix(spaced);
  if (dense_bias) d.first_bias = vector(first_bias);
  return d;
}

DeviceEncoder::DeviceEncoder(const EncoderModel& model, ElementType type, int padded_head_dim)
    : type_(type), pad_{model.config.head_dim(), padded_head_dim} {
  model.validate();
  check(pad_.padded >= pad_.head_dim, "DeviceEncoder", "padded head size ", pad_.padded, " < ", pad_.head_dim);
  embeddings_.words = matrix(model.word_embed);
  embeddings_.positions = matrix(model.position_embed);
  if (!model.type_embed.empty()) embeddings_.types = matrix(model.type_embed);
  for (const DeviceMatrix* m : {&embeddings_.words, &embeddings_.positions, &embeddings_.types})
    check(!m->data || m->ld == m->cols, "DeviceEncoder", "hidden size ", m->cols,
          " is not a multiple of 8 (the embedding rows must be contiguous)");
  embed_norm_ = {f32(model.embed_norm.weight), f32(model.embed_norm.bias)};
  for (const EncoderLayer& l : model.layers) {
    check(l.qkv.parts.size() == 3, model.source, "encoder is not packed (EncoderModel::pack() must run first)");
    DeviceEncoderLayer& d = layers_.emplace_back();
    d.qkv = qkv(l.qkv);
    if (pad_.padded == pad_.head_dim) {
      d.o = linear(l.o);
    } else {  // o reads the padded attention output: zero columns between the heads
      Linear o = l.o;
      o.first = pad_cols(l.o.first, pad_);
      d.o = linear(o);
    }
    d.up = linear(l.up);
    d.down = linear(l.down);
    d.attn_norm = {f32(l.attn_norm.weight), f32(l.attn_norm.bias)};
    d.mlp_norm = {f32(l.mlp_norm.weight), f32(l.mlp_norm.bias)};
  }
}

}  // namespace fsvd::cuda
