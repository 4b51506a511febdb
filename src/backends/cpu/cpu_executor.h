#pragma once
// fp32 reference backend: the HF LlamaForCausalLM forward (Qwen2's q/k/v
// biases included) over a packed Model, with a paged KV cache.
#include <functional>
#include <optional>
#include <vector>

#include "backends/cpu/linear_input.h"
#include "backends/executor.h"
#include "model/model.h"

namespace fsvd {

class CpuExecutor : public Executor {
 public:
  // `model` must be packed (Model::pack) and outlive the executor. The KV cache
  // has `pages`; one sequence holds at most `context` positions (at most the
  // cache's). `threads` <= 0 uses every processor. The thread count is applied
  // (OpenMP and OpenBLAS, process-wide for the latter) at each step.
  // `kv_fp8`: keys and values rounded to fp8 e4m3 as they are cached (the
  // GPU's fp8 KV cache, emulated: cuda::CudaOptions::kv_fp8).
  CpuExecutor(const Model& model, KvPages pages, int context, int threads, bool kv_fp8 = false);
  // One sequence: a cache of `context` positions.
  CpuExecutor(const Model& model, int context, int threads);

  KvPages kv_pages() const override { return pages_; }
  void step(std::span<const SeqSlice> batch, std::vector<float>& logits) override;
  void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
               std::vector<float>& logits) override;
  int context_size() const override { return context_; }
  int vocab_size() const override { return model_.config.vocab; }
  ExecutorStats stats() override;
  // Called with every linear input of later forwards; empty to stop.
  void set_observer(LinearInputObserver observer) { observer_ = std::move(observer); }
  // How forward_layer() runs a layer: up to where, and from where.
  struct LayerRun {
    // Stop once the observer has seen this input (`hidden` then holds the
    // layer's input residual plus whatever the layer added before it).
    std::optional<LinearInput> stop_at;
    // Resume where an earlier run of this layer over the same rows stopped
    // (O, GateUp or Down; empty: from the start), skipping what came before
    // (and its observer calls): `hidden` holds what that run left there, and
    // `rows` that input's rows (O: the attention output [n, q_dim]; Down: the
    // MLP activations [n, intermediate]; GateUp: none, its norm is redone).
    std::optional<LinearInput> resume_at;
    const float* rows = nullptr;
  };
  // Runs layer `index` over `hidden` [n, hidden], in place: the residual stream
  // of one sequence from position 0 (no embedding, final norm or lm_head). Lets
  // compression run a model layer by layer and stage by stage.
  void forward_layer(float* hidden, int64_t n, int index, const LayerRun& run);
  // The final norm and lm_head of `n` residual rows [n, hidden] (what
  // forward_layer left after the last layer): logits [n, vocab].
  void logits_of(const float* hidden, int64_t n, std::vector<float>& logits);

 private:
  // The step's token rows are the slices' tokens one after another; slice i
  // starts at row first_[i].
  void run_layer(int index, std::span<const SeqSlice> batch, int64_t n, const LayerRun& run);
  void size_buffers(int64_t n);
  // q|k|v of xn_'s rows, into the KV cache, and attention into att_.
  void attend(int index, std::span<const SeqSlice> batch, int64_t n);
  void observe(int layer, LinearInput input, const std::vector<float>& rows, int64_t n, int64_t dim) const {
    if (observer_) observer_(layer, input, rows.data(), n, dim);
  }
  float* k_pool(int layer) { return k_cache_.data() + layer * pages_.positions() * kv_dim_; }
  float* v_pool(int layer) { return v_cache_.data() + layer * pages_.positions() * kv_dim_; }

  const Model& model_;
  KvPages pages_;
  int context_;
  int threads_;
  bool kv_fp8_;
  std::vector<int32_t> all_blocks_;  // 0, 1, 2, ...: forward()'s sequence
  std::vector<int32_t> positions_;   // forward_layer(): placeholder token ids, one per row
  int filled_ = 0;                   // forward(): positions [0, filled_) hold valid keys/values
  int64_t q_dim_, kv_dim_;
  std::vector<float> inv_freq_;
  std::vector<float> k_cache_, v_cache_;  // [layers][pages_.positions()][n_kv_heads * head_dim]
  std::vector<int64_t> first_;
  // Activations for the token rows of one step, resized on demand.
  std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, scratch_;
  LinearInputObserver observer_;
};

}  // namespace fsvd
