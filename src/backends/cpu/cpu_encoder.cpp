#include "backends/cpu/cpu_encoder.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/attention.h"
#include "backends/cpu/linear_ops.h"
#include "backends/cpu/ops.h"
#include "core/error.h"

namespace fsvd {

CpuEncoder::CpuEncoder(const EncoderModel& model, int threads)
    : model_(model), threads_(threads > 0 ? threads : omp_get_num_procs()) {
  model.validate();
  for (const EncoderLayer& l : model.layers)
    check(l.qkv.parts.size() == 3, model.source, "encoder is not packed (EncoderModel::pack() must run first)");
}

void CpuEncoder::check_input(const EncoderInput& in, size_t index) const {
  const EncoderConfig& c = model_.config;
  const std::string where = "encoder input " + std::to_string(index);
  check(!in.ids.empty() && in.ids.size() == in.type_ids.size(), where, in.ids.size(), " ids and ",
        in.type_ids.size(), " token types (must be equal and non-zero)");
  check(static_cast<int64_t>(in.ids.size()) <= c.max_tokens(), where, in.ids.size(),
        " tokens exceed the model's ", c.max_tokens(), " positions");
  for (size_t t = 0; t < in.ids.size(); ++t) {
    check(in.ids[t] >= 0 && in.ids[t] < c.vocab, where, "token id ", in.ids[t], " is outside the vocabulary of ",
          c.vocab);
    check(in.type_ids[t] >= 0 && in.type_ids[t] < std::max(c.type_vocab, 1), where, "token type ", in.type_ids[t],
          " is outside the model's ", c.type_vocab, " types");
  }
}

void CpuEncoder::forward(std::span<const EncoderInput> batch, std::vector<float>& states,
                         std::vector<int64_t>& offsets) {
  const EncoderConfig& c = model_.config;
  const int64_t d = c.hidden;
  omp_set_num_threads(threads_);
  openblas_set_num_threads(threads_);
  offsets.assign(1, 0);
  for (size_t i = 0; i < batch.size(); ++i) {
    check_input(batch[i], i);
    offsets.push_back(offsets.back() + static_cast<int64_t>(batch[i].ids.size()));
  }
  const int64_t n = offsets.back();
  x_.resize(n * d);
  // Embeddings: word + absolute position + token type, then LayerNorm.
  for (size_t i = 0; i < batch.size(); ++i) {
    const EncoderInput& in = batch[i];
    for (size_t t = 0; t < in.ids.size(); ++t) {
      float* row = x_.data() + (offsets[i] + static_cast<int64_t>(t)) * d;
      const float* word = model_.word_embed.data() + int64_t{in.ids[t]} * d;
      const float* pos = model_.position_embed.data() + (c.position_offset + static_cast<int64_t>(t)) * d;
      for (int64_t j = 0; j < d; ++j) row[j] = word[j] + pos[j];
      if (c.type_vocab > 0) {
        const float* type = model_.type_embed.data() + int64_t{in.type_ids[t]} * d;
        for (int64_t j = 0; j < d; ++j) row[j] += type[j];
      }
    }
  }
  cpu::layernorm(x_.data(), model_.embed_norm.weight.data(), model_.embed_norm.bias.data(), n, d, c.ln_eps,
                 x_.data());
  for (const EncoderLayer& l : model_.layers) run_layer(l, offsets, n);
  states.assign(x_.begin(), x_.end());
}

void CpuEncoder::run_layer(const EncoderLayer& l, std::span<const int64_t> offsets, int64_t n) {
  const EncoderConfig& c = model_.config;
  const int64_t d = c.hidden, f = c.intermediate;
  q_.resize(n * d);
  k_.resize(n * d);
  v_.resize(n * d);
  att_.resize(n * d);
  h_.resize(n * f);
  // Attention: q|k|v in one packed GEMM over all rows, then each input attends
  // over its own rows only (no padding, no mask).
  const cpu::OutSlot qkv_out[] = {{q_.data(), d}, {k_.data(), d}, {v_.data(), d}};
  cpu::apply_packed(l.qkv, x_.data(), n, qkv_out, scratch_);
  const cpu::HeadShape heads{c.n_heads, c.n_heads, c.head_dim()};
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    const int64_t at = offsets[i] * d;
    const int len = static_cast<int>(offsets[i + 1] - offsets[i]);
    const cpu::KvView kv{k_.data() + at, v_.data() + at, d};
    cpu::attention(q_.data() + at, d, kv, len, 0, heads, att_.data() + at, /*causal=*/false);
  }
  // Post-LayerNorm residuals: x = LN(x + o(att)), then x = LN(x + down(gelu(up(x)))).
  cpu::apply_linear(l.o, att_.data(), n, x_.data(), d, true, scratch_);
  cpu::layernorm(x_.data(), l.attn_norm.weight.data(), l.attn_norm.bias.data(), n, d, c.ln_eps, x_.data());
  cpu::apply_linear(l.up, x_.data(), n, h_.data(), f, false, scratch_);
  cpu::gelu(h_.data(), n * f);
  cpu::apply_linear(l.down, h_.data(), n, x_.data(), d, true, scratch_);
  cpu::layernorm(x_.data(), l.mlp_norm.weight.data(), l.mlp_norm.bias.data(), n, d, c.ln_eps, x_.data());
}

std::vector<float> CpuEncoder::embed(std::span<const EncoderInput> batch) {
  const int64_t d = model_.config.hidden;
  std::vector<float> states;
  std::vector<int64_t> offsets;
  forward(batch, states, offsets);
  std::vector<float> out(batch.size() * d);
  for (size_t i = 0; i < batch.size(); ++i) {
    const float* rows = states.data() + offsets[i] * d;
    const int64_t len = offsets[i + 1] - offsets[i];
    float* o = out.data() + i * d;
    switch (model_.pooling) {
      case Pooling::cls:
        std::copy(rows, rows + d, o);
        break;
      case Pooling::mean:
        for (int64_t j = 0; j < d; ++j) {
          double sum = 0;
          for (int64_t t = 0; t < len; ++t) sum += rows[t * d + j];
          o[j] = static_cast<float>(sum / static_cast<double>(len));
        }
        break;
      case Pooling::max:
        for (int64_t j = 0; j < d; ++j) {
          o[j] = rows[j];
          for (int64_t t = 1; t < len; ++t) o[j] = std::max(o[j], rows[t * d + j]);
        }
        break;
    }
    if (model_.normalize) cpu::l2_normalize(o, d);
  }
  return out;
}

std::vector<float> CpuEncoder::classify(std::span<const EncoderInput> batch) {
  const ClassifierHead& head = model_.classifier;
  check(!head.empty(), model_.source, "is not a sequence-classification model (no classifier head)");
  const int64_t d = model_.config.hidden, labels = static_cast<int64_t>(head.labels.size());
  std::vector<float> states;
  std::vector<int64_t> offsets;
  forward(batch, states, offsets);
  const int64_t b = static_cast<int64_t>(batch.size());
  std::vector<float> first(b * d), pre(b * d), logits(b * labels);
  for (int64_t i = 0; i < b; ++i)
    std::copy(states.data() + offsets[i] * d, states.data() + (offsets[i] + 1) * d, first.data() + i * d);
  cpu::apply_linear(head.pre, first.data(), b, pre.data(), d, false, scratch_);
  for (float& x : pre) x = head.activation == ClassifierHead::Activation::tanh ? std::tanh(x) : std::max(x, 0.0f);
  cpu::apply_linear(head.out, pre.data(), b, logits.data(), labels, false, scratch_);
  return logits;
}

}  // namespace fsvd
