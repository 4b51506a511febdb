#pragma once
// fp32 reference backend: the HF LlamaForCausalLM forward (Qwen2's q/k/v
// biases included) over a packed Model, with a dense KV cache.
#include <functional>
#include <vector>

#include "backends/executor.h"
#include "model/model.h"

namespace fsvd {

// The activations a group of linears reads: q|k|v and gate|up share theirs.
enum class LinearInput { Qkv, O, GateUp, Down };

// Sees the rows [n, dim] each linear group of `layer` reads during forward(),
// e.g. to gather calibration statistics for compression.
using LinearInputObserver =
    std::function<void(int layer, LinearInput input, const float* rows, int64_t n, int64_t dim)>;

class CpuExecutor : public Executor {
 public:
  // `model` must be packed (Model::pack) and outlive the executor. The KV cache
  // holds `context` positions; `threads` <= 0 uses every processor. The thread
  // count is applied (OpenMP and OpenBLAS, process-wide for the latter) at
  // each forward().
  CpuExecutor(const Model& model, int context, int threads);

  void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
               std::vector<float>& logits) override;
  int context_size() const override { return context_; }
  int vocab_size() const override { return model_.config.vocab; }
  ExecutorStats stats() override;
  // Called with every linear input of later forwards; empty to stop.
  void set_observer(LinearInputObserver observer) { observer_ = std::move(observer); }

 private:
  void run_layer(int index, int64_t n, int pos);
  void observe(int layer, LinearInput input, const std::vector<float>& rows, int64_t n, int64_t dim) const {
    if (observer_) observer_(layer, input, rows.data(), n, dim);
  }
  float* k_at(int layer, int pos);  // cache row of `pos` in `layer`
  float* v_at(int layer, int pos);

  const Model& model_;
  int context_;
  int threads_;
  int filled_ = 0;  // positions [0, filled_) hold valid keys/values
  int64_t q_dim_, kv_dim_;
  std::vector<float> inv_freq_;
  std::vector<float> k_cache_, v_cache_;  // [layers][context][n_kv_heads * head_dim]
  // Activations for the tokens of one forward, resized on demand.
  std::vector<float> x_, xn_, q_, att_, gate_, up_, scratch_;
  LinearInputObserver observer_;
};

}  // namespace fsvd
