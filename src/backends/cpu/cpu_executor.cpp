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
    : CpuExecutor(model, KvPages::holding(context), context, threads) {}

CpuExecutor::CpuExecutor(const Model& model, KvPages pages, int context, int threads, bool kv_fp8)
    : model_(model),
      pages_(pages),
      context_(context),
      threads_(threads > 0 ? threads : omp_get_num_procs()),
      kv_fp8_(kv_fp8) {
  const ModelConfig& c = model.config;
  model.validate_packed("building an executor");
  check(context > 0, "CpuExecutor", "context size must be positive, got ", context);
  check(pages.block_size > 0 && pages.blocks > 0, "CpuExecutor", "a KV cache of ", pages.blocks,
        " blocks of ", pages.block_size, " positions");
  check(context <= pages.positions(), "CpuExecutor", "context ", context, " exceeds the KV cache's ",
        pages.positions(), " positions");
  q_dim_ = c.q_dim();
  kv_dim_ = c.kv_dim();
  inv_freq_.resize(c.head_dim / 2);
  rope_inv_freq(c, inv_freq_.data());
  all_blocks_.resize(pages.blocks);
  for (int b = 0; b < pages.blocks; ++b) all_blocks_[b] = b;
  const int64_t cache = int64_t{c.n_layers} * pages.positions() * kv_dim_;
  try {
    k_cache_.assign(cache, 0.0f);
    v_cache_.assign(cache, 0.0f);
  } catch (const std::bad_alloc&) {
    fail("CpuExecutor", "cannot allocate a KV cache of ", 2.0 * cache * sizeof(float) / (1 << 30), " GiB for ",
         pages.positions(), " positions");
  }
}

void CpuExecutor::forward(std::span<const int32_t> tokens, int pos, bool all_logits,
                          std::vector<float>& logits) {
  check_forward_request("CpuExecutor::forward", tokens, pos, filled_, context_, model_.config.vocab);
  const SeqSlice slice{tokens, pos, all_blocks_, all_logits ? StepOutput::all : StepOutput::last};
  step({&slice, 1}, logits);
  filled_ = pos + static_cast<int>(tokens.size());
}

void CpuExecutor::step(std::span<const SeqSlice> batch, std::vector<float>& logits) {
  const ModelConfig& c = model_.config;
  const int64_t n = check_step_request("CpuExecutor::step", batch, pages_, context_, c.vocab);

  size_buffers(n);
  first_.clear();
  int64_t row = 0;
  for (const SeqSlice& s : batch) {
    first_.push_back(row);
    for (int32_t t : s.tokens)
      std::memcpy(x_.data() + row++ * c.hidden, model_.embed.data() + int64_t{t} * c.hidden,
                  sizeof(float) * c.hidden);
  }
  for (int l = 0; l < c.n_layers; ++l) run_layer(l, batch, n, LayerRun{});

  // Only the rows whose logits are wanted go through the final norm and lm_head.
  int64_t rows = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t len = static_cast<int64_t>(batch[i].tokens.size());
    const int64_t from = batch[i].output == StepOutput::all ? first_[i] : first_[i] + len - 1;
    const int64_t count = batch[i].output == StepOutput::none ? 0 : first_[i] + len - from;
    cpu::rmsnorm(x_.data() + from * c.hidden, model_.final_norm.data(), count, c.hidden, c.rms_eps,
                 xn_.data() + rows * c.hidden);
    rows += count;
  }
  logits.resize(rows * c.vocab);
  if (rows > 0) cpu::apply_linear(model_.lm_head, xn_.data(), rows, logits.data(), c.vocab, false, scratch_);
}

void CpuExecutor::size_buffers(int64_t n) {
  const ModelConfig& c = model_.config;
  omp_set_num_threads(threads_);
  openblas_set_num_threads(threads_);
  x_.resize(n * c.hidden);
  xn_.resize(n * c.hidden);
  q_.resize(n * q_dim_);
  k_.resize(n * kv_dim_);
  v_.resize(n * kv_dim_);
  att_.resize(n * q_dim_);
  gate_.resize(n * c.intermediate);
  up_.resize(n * c.intermediate);
}

void CpuExecutor::forward_layer(float* hidden, int64_t n, int index, const LayerRun& run) {
  const ModelConfig& c = model_.config;
  check(0 <= index && index < c.n_layers, "CpuExecutor::forward_layer", "layer ", index, " outside the model's ",
        c.n_layers, " layers");
  check(n > 0 && n <= context_, "CpuExecutor::forward_layer", n, " rows for a context of ", context_);
  size_buffers(n);
  // run_layer reads only the slice's length, position and blocks: the token ids are never looked at.
  positions_.resize(n);
  const SeqSlice slice{{positions_.data(), static_cast<size_t>(n)}, 0, all_blocks_, StepOutput::none};
  first_.assign(1, 0);
  std::memcpy(x_.data(), hidden, sizeof(float) * n * c.hidden);
  run_layer(index, {&slice, 1}, n, run);
  std::memcpy(hidden, x_.data(), sizeof(float) * n * c.hidden);
}

void CpuExecutor::logits_of(const float* hidden, int64_t n, std::vector<float>& logits) {
  const ModelConfig& c = model_.config;
  check(n > 0 && n <= context_, "CpuExecutor::logits_of", n, " rows for a context of ", context_);
  size_buffers(n);
  cpu::rmsnorm(hidden, model_.final_norm.data(), n, c.hidden, c.rms_eps, xn_.data());
  logits.resize(n * c.vocab);
  cpu::apply_linear(model_.lm_head, xn_.data(), n, logits.data(), c.vocab, false, scratch_);
}

void CpuExecutor::attend(int index, std::span<const SeqSlice> batch, int64_t n) {
  const ModelConfig& c = model_.config;
  const Layer& l = model_.layers[index];
  const cpu::HeadShape heads{c.n_heads, c.n_kv_heads, c.head_dim};
  const cpu::OutSlot qkv_out[] = {{q_.data(), q_dim_}, {k_.data(), kv_dim_}, {v_.data(), kv_dim_}};
  cpu::apply_packed(l.qkv, xn_.data(), n, qkv_out, scratch_);
  float* k_cache = k_pool(index);
  float* v_cache = v_pool(index);
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqSlice& s = batch[i];
    const int len = static_cast<int>(s.tokens.size());
    float* q = q_.data() + first_[i] * q_dim_;
    float* k = k_.data() + first_[i] * kv_dim_;
    const float* v = v_.data() + first_[i] * kv_dim_;
    cpu::rope(q, len, q_dim_, c.n_heads, c.head_dim, s.pos, inv_freq_.data());
    cpu::rope(k, len, kv_dim_, c.n_kv_heads, c.head_dim, s.pos, inv_freq_.data());
    const cpu::KvView kv{k_cache, v_cache, kv_dim_, s.blocks.data(), pages_.block_size};
    for (int t = 0; t < len; ++t) {
      const int64_t at = kv.row(s.pos + t) * kv_dim_;
      std::memcpy(k_cache + at, k + t * kv_dim_, sizeof(float) * kv_dim_);
      std::memcpy(v_cache + at, v + t * kv_dim_, sizeof(float) * kv_dim_);
      if (kv_fp8_) cpu::round_e4m3(k_cache + at, kv_dim_), cpu::round_e4m3(v_cache + at, kv_dim_);
    }
    cpu::attention(q, q_dim_, kv, len, s.pos, heads, att_.data() + first_[i] * q_dim_);
  }
}

void CpuExecutor::run_layer(int index, std::span<const SeqSlice> batch, int64_t n, const LayerRun& run) {
  const ModelConfig& c = model_.config;
  const Layer& l = model_.layers[index];

  const LinearInput from = run.resume_at.value_or(LinearInput::Qkv);
  check(from == LinearInput::Qkv || from == LinearInput::GateUp || run.rows, "CpuExecutor::forward_layer",
        "resuming at input ", static_cast<int>(from), " needs its rows");
  check(!run.stop_at || *run.stop_at >= from, "CpuExecutor::forward_layer", "stopping at input ",
        static_cast<int>(run.stop_at.value_or(from)), " before resuming at ", static_cast<int>(from));
  // Attention block: q|k|v from one packed GEMM over every row of the step;
  // each sequence's k and v land in its blocks, and its queries attend to them.
  if (from == LinearInput::Qkv) {
    cpu::rmsnorm(x_.data(), l.attn_norm.data(), n, c.hidden, c.rms_eps, xn_.data());
    observe(index, LinearInput::Qkv, xn_, n, c.hidden);
    if (run.stop_at == LinearInput::Qkv) return;
    attend(index, batch, n);
  } else if (from == LinearInput::O) {
    std::memcpy(att_.data(), run.rows, sizeof(float) * n * q_dim_);
  }
  if (from <= LinearInput::O) {
    observe(index, LinearInput::O, att_, n, q_dim_);
    if (run.stop_at == LinearInput::O) return;
    cpu::apply_linear(l.o, att_.data(), n, x_.data(), c.hidden, true, scratch_);
  }

  // MLP block: gate|up from one packed GEMM, then down added to the residual.
  if (from <= LinearInput::GateUp) {
    cpu::rmsnorm(x_.data(), l.mlp_norm.data(), n, c.hidden, c.rms_eps, xn_.data());
    observe(index, LinearInput::GateUp, xn_, n, c.hidden);
    if (run.stop_at == LinearInput::GateUp) return;
    const cpu::OutSlot gu_out[] = {{gate_.data(), c.intermediate}, {up_.data(), c.intermediate}};
    cpu::apply_packed(l.gate_up, xn_.data(), n, gu_out, scratch_);
    cpu::silu_mul(gate_.data(), up_.data(), n * c.intermediate, gate_.data());
  } else {
    std::memcpy(gate_.data(), run.rows, sizeof(float) * n * c.intermediate);
  }
  observe(index, LinearInput::Down, gate_, n, c.intermediate);
  if (run.stop_at == LinearInput::Down) return;
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
