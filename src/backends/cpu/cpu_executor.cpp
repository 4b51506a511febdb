#include "backends/cpu/cpu_executor.h"

#include <cblas.h>
#include <omp.h>

#include <cstring>
#include <new>

#include "backends/cpu/attention.h"
#include "backends/cpu/linear_ops.h"
#include "backends/cpu/ops.h"
#include "core/error.h"

namespace fsvd {

CpuExecutor::CpuExecutor(const Model& model, int context, int threads)
    : model_(model),
      context_(context),
      threads_(threads > 0 ? threads : omp_get_num_procs()) {
  const ModelConfig& c = model.config;
  model.validate_packed("building an executor");
  check(context > 0, "CpuExecutor", "context size must be positive, got ", context);
  q_dim_ = c.q_dim();
  kv_dim_ = c.kv_dim();
  inv_freq_.resize(c.head_dim / 2);
  rope_inv_freq(c, inv_freq_.data());
  const int64_t cache = int64_t{c.n_layers} * context * kv_dim_;
  try {
    k_cache_.assign(cache, 0.0f);
    v_cache_.assign(cache, 0.0f);
  } catch (const std::bad_alloc&) {
    fail("CpuExecutor", "cannot allocate a KV cache of ", 2.0 * cache * sizeof(float) / (1 << 30),
         " GiB for context ", context);
  }
}

float* CpuExecutor::k_at(int layer, int pos) {
  return k_cache_.data() + (int64_t{layer} * context_ + pos) * kv_dim_;
}
float* CpuExecutor::v_at(int layer, int pos) {
  return v_cache_.data() + (int64_t{layer} * context_ + pos) * kv_dim_;
}

void CpuExecutor::forward(std::span<const int32_t> tokens, int pos, bool all_logits,
                          std::vector<float>& logits) {
  const ModelConfig& c = model_.config;
  check_forward_request("CpuExecutor::forward", tokens, pos, filled_, context_, c.vocab);

  omp_set_num_threads(threads_);
  openblas_set_num_threads(threads_);
  const int64_t n = static_cast<int64_t>(tokens.size());
  x_.resize(n * c.hidden);
  xn_.resize(n * c.hidden);
  q_.resize(n * q_dim_);
  att_.resize(n * q_dim_);
  gate_.resize(n * c.intermediate);
  up_.resize(n * c.intermediate);

  for (int64_t i = 0; i < n; ++i)
    std::memcpy(x_.data() + i * c.hidden, model_.embed.data() + int64_t{tokens[i]} * c.hidden,
                sizeof(float) * c.hidden);
  for (int l = 0; l < c.n_layers; ++l) run_layer(l, n, pos);
  filled_ = pos + static_cast<int>(n);

  // Only the rows whose logits are wanted go through the final norm and lm_head.
  const int64_t first = all_logits ? 0 : n - 1, rows = n - first;
  cpu::rmsnorm(x_.data() + first * c.hidden, model_.final_norm.data(), rows, c.hidden, c.rms_eps,
               xn_.data());
  logits.resize(rows * c.vocab);
  cpu::apply_linear(model_.lm_head, xn_.data(), rows, logits.data(), c.vocab, false, scratch_);
}

void CpuExecutor::run_layer(int index, int64_t n, int pos) {
  const ModelConfig& c = model_.config;
  const Layer& l = model_.layers[index];

  // Attention block: q|k|v from one packed GEMM; k and v land in the cache.
  cpu::rmsnorm(x_.data(), l.attn_norm.data(), n, c.hidden, c.rms_eps, xn_.data());
  observe(index, LinearInput::Qkv, xn_, n, c.hidden);
  float* k_new = k_at(index, pos);
  float* v_new = v_at(index, pos);
  const cpu::OutSlot qkv_out[] = {{q_.data(), q_dim_}, {k_new, kv_dim_}, {v_new, kv_dim_}};
  cpu::apply_packed(l.qkv, xn_.data(), n, qkv_out, scratch_);
  cpu::rope(q_.data(), n, q_dim_, c.n_heads, c.head_dim, pos, inv_freq_.data());
  cpu::rope(k_new, n, kv_dim_, c.n_kv_heads, c.head_dim, pos, inv_freq_.data());
  cpu::attention(q_.data(), q_dim_, {k_at(index, 0), v_at(index, 0), kv_dim_}, static_cast<int>(n), pos,
                 {c.n_heads, c.n_kv_heads, c.head_dim}, att_.data());
  observe(index, LinearInput::O, att_, n, q_dim_);
  cpu::apply_linear(l.o, att_.data(), n, x_.data(), c.hidden, true, scratch_);

  // MLP block: gate|up from one packed GEMM, then down added to the residual.
  cpu::rmsnorm(x_.data(), l.mlp_norm.data(), n, c.hidden, c.rms_eps, xn_.data());
  observe(index, LinearInput::GateUp, xn_, n, c.hidden);
  const cpu::OutSlot gu_out[] = {{gate_.data(), c.intermediate}, {up_.data(), c.intermediate}};
  cpu::apply_packed(l.gate_up, xn_.data(), n, gu_out, scratch_);
  cpu::silu_mul(gate_.data(), up_.data(), n * c.intermediate, gate_.data());
  observe(index, LinearInput::Down, gate_, n, c.intermediate);
  cpu::apply_linear(l.down, gate_.data(), n, x_.data(), c.hidden, true, scratch_);
}

ExecutorStats CpuExecutor::stats() {
  ExecutorStats st;
  st.device = "cpu";
  st.weight_bytes = static_cast<size_t>(model_.unique_params()) * sizeof(float);
  st.cache_bytes = (k_cache_.size() + v_cache_.size()) * sizeof(float);
  return st;
}

}  // namespace fsvd
