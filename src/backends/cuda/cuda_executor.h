#pragma once
// The GPU backend: a packed Model's weights in bf16 on the device, a dense
// bf16 KV cache, and a decode step built from the kernels of this folder
// (fp32 activations and accumulation). Logits come back as fp32 on the host.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backends/cuda/decode_attention.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_model.h"
#include "backends/cuda/kv_cache.h"
#include "backends/executor.h"
#include "model/model.h"

namespace fsvd::cuda {

class CudaExecutor : public Executor {
 public:
  // `model` must be packed (Model::pack); it is read only here. The KV cache
  // holds `context` positions (not the model's max_seq). Throws Error for
  // shapes the kernels do not support (head_dim other than 64/128, hidden
  // above 8192) or a cache that does not fit in free GPU memory.
  CudaExecutor(const Model& model, int context);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
               std::vector<float>& logits) override;
  int context_size() const override { return context_; }
  int vocab_size() const override { return config_.vocab; }

  // Device bytes of the uploaded weights (shared storage counted once).
  size_t weight_bytes() const { return weights_->bytes_uploaded(); }

  // One token through the whole model: reads the token id at d_token() and
  // its position at d_pos(), appends its keys/values to the cache and leaves
  // fp32 logits in d_logits(). Reads only device state, so it can be captured
  // into a CUDA graph and replayed for every token.
  void enqueue_decode_step(cudaStream_t stream);
  int32_t* d_token() const { return token_.data(); }
  int* d_pos() const { return pos_.data(); }
  const float* d_logits() const { return logits_.data(); }
  cudaStream_t stream() const { return stream_; }

 private:
  void enqueue_layer(int index, cudaStream_t stream);

  ModelConfig config_;
  int context_;
  int filled_ = 0;  // positions [0, filled_) hold valid keys/values
  HeadShape heads_;
  DecodeAttentionPlan attention_plan_;
  std::unique_ptr<DeviceModel> weights_;
  cudaStream_t stream_ = nullptr;

  DeviceBuffer<__nv_bfloat16> k_cache_, v_cache_;  // [layers][context][kv_dim]
  DeviceBuffer<float> inv_freq_;
  DeviceBuffer<int32_t> token_;
  DeviceBuffer<int> pos_;
  // Activations of one token.
  DeviceBuffer<float> x_, qkv_, q_, k_, v_, att_, attention_work_, rank_, gate_up_, gate_, up_,
      logits_;
};

}  // namespace fsvd::cuda
