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
    : EncoderExecutor(model), model_(model), threads_(threads > 0 ? threads : omp_get_num_procs()) {}

ExecutorStats CpuEncoder::stats() {
  ExecutorStats st;
  st.device = "cpu";
  st.weight_bytes = static_cast<size_t>(model_.unique_params()) * sizeof(float);
  return st;
}

void CpuEncoder::forward(std::span<const EncoderInput> batch, std::vector<float>& states,
                         std::vector<int64_t>& offsets) {
  const EncoderConfig& c = model_.config;
  const int64_t d = c.hidden;
  omp_set_num_threads(threads_);
  openblas_set_num_threads(threads_);
  offsets = check_batch(batch);
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
  for (int l = 0; l < c.n_layers; ++l) run_layer(l, offsets, n);
  states.assign(x_.begin(), x_.end());
}

void CpuEncoder::run_layer(int index, std::span<const int64_t> offsets, int64_t n) {
  const EncoderLayer& l = model_.layers[index];
  const EncoderConfig& c = model_.config;
  const int64_t d = c.hidden, f = c.intermediate;
  q_.resize(n * d);
  k_.resize(n * d);
  v_.resize(n * d);
  att_.resize(n * d);
  h_.resize(n * f);
  // Attention: q|k|v in one packed GEMM over all rows, then each input attends
  // over its own rows only (no padding, no mask).
  observe(index, LinearInput::Qkv, x_, n, d);
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
  observe(index, LinearInput::O, att_, n, d);
  cpu::apply_linear(l.o, att_.data(), n, x_.data(), d, true, scratch_);
  cpu::layernorm(x_.data(), l.attn_norm.weight.data(), l.attn_norm.bias.data(), n, d, c.ln_eps, x_.data());
  observe(index, LinearInput::GateUp, x_, n, d);
  cpu::apply_linear(l.up, x_.data(), n, h_.data(), f, false, scratch_);
  cpu::gelu(h_.data(), n * f);
  observe(index, LinearInput::Down, h_, n, f);
  cpu::apply_linear(l.down, h_.data(), n, x_.data(), d, true, scratch_);
  cpu::layernorm(x_.data(), l.mlp_norm.weight.data(), l.mlp_norm.bias.data(), n, d, c.ln_eps, x_.data());
}

}  // namespace fsvd
