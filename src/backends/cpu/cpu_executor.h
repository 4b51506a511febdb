#pragma once
// fp32 reference backend: the HF LlamaForCausalLM forward (Qwen2's q/k/v
// biases included) over a packed Model, with a dense KV cache.
#include <vector>

#include "backends/executor.h"
#include "model/model.h"

namespace fsvd {

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

 private:
  void run_layer(int index, int64_t n, int pos);
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
};

}  // namespace fsvd
