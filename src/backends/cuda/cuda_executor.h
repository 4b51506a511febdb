#pragma once
// The GPU backend: a model's weights on the device (DeviceModel), a KV cache
// for the requested context (one sequence over a paged pool, its blocks in
// order), and a decode step built from the kernels
// of this folder (fp32 activations and accumulation), replayed as CUDA
// graphs. Logits come back as fp32 on the host.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/decode_attention.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_model.h"
#include "backends/cuda/gemv.h"
#include "backends/cuda/handles.h"
#include "backends/cuda/identity_pages.h"
#include "backends/cuda/kv_cache.h"
#include "backends/cuda/lowrank_kv.h"
#include "backends/cuda/prefill.h"
#include "backends/executor.h"
#include "model/model.h"

namespace fsvd::cuda {

// How a decode step reaches the GPU: every kernel launched from the host
// (none), one graph per layer plus one each for the embedding and the head
// (layer), or the whole step as one graph (model). Graphs are captured once
// and replayed for every token; the token id and position live in pinned
// host memory that the captured copies read at replay.
enum class GraphMode { none, layer, model };
GraphMode parse_graph_mode(const std::string& name);  // throws Error naming the flag
const char* graph_mode_name(GraphMode mode);

// The KV cache: dense (each layer's RoPE'd k and v per position, read in
// place) or lowrank (rank-space k and v, the whole context rebuilt every step:
// lowrank_kv.h).
enum class KvMode { dense, lowrank };
KvMode parse_kv_mode(const std::string& name);  // throws Error naming the flag

struct CudaOptions {
  ElementType weights = ElementType::BF16;  // F32: exact checks against the CPU backend
  GraphMode graph = GraphMode::model;
  // Programmatic dependent launch between the decode step's GEMVs: each starts
  // loading weights while the previous kernel finishes.
  bool pdl = true;
  // Packed projections: q|k|v and gate|up first factors in one RMSNorm-GEMV
  // each, the q/k/v second factors in one grouped launch. Off (the ablation):
  // one launch per part.
  bool pack = true;
  KvMode kv = KvMode::dense;
};

class CudaExecutor : public Executor {
 public:
  // `model` must be packed (Model::pack); it is read only here. The KV cache
  // holds `context` positions (not the model's max_seq). Throws Error for
  // shapes the kernels do not support (head_dim other than 64, 80, 96, 128
  // or 256, hidden above 8192) or a cache that does not fit in free GPU
  // memory. Prompts go through Prefill with bf16 weights and head_dim 64 or
  // 128, through decode steps otherwise.
  CudaExecutor(const Model& model, int context, CudaOptions options = {});
  // Runs weights already on the device (a synthetic model, say).
  CudaExecutor(std::shared_ptr<const DeviceModel> weights, int context, CudaOptions options = {});
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
               std::vector<float>& logits) override;
  int context_size() const override { return context_; }
  int vocab_size() const override { return config_.vocab; }

  ExecutorStats stats() override;
  bool samples_on_device() const override { return true; }
  int32_t forward_next(std::span<const int32_t> tokens, int pos, const SamplingParams& params) override;
  // Each step is queued before the previous one's token is read on the host:
  // the token and position stay on the device from step to step.
  int decode_stream(int32_t token, int pos, int count, const SamplingParams& params,
                    const std::function<bool(int32_t)>& on_token) override;

 private:
  // The decode step in pieces: 0 looks up the embedding of the token in
  // token_ (at the position in pos_), 1..n_layers are the layers, n_layers + 1
  // is the head and then the copy of the logits out, or, while sampling_ is
  // set, the token sampled into token_ and published to the host ring (pos_
  // moves on: the next step of a stream needs nothing from the host). One
  // graph per piece in layer mode.
  int piece_count() const { return config_.n_layers + 2; }
  void enqueue_piece(int piece, cudaStream_t stream);
  void enqueue_layer(int index, cudaStream_t stream);
  // y = rmsnorm(x) through p's first factors (packed, or part by part).
  void packed_first(const DevicePacked& p, const float* gain, float* out, cudaStream_t stream);
  // The parts' outputs of a packed projection whose first factors wrote
  // packed_out: a dense part's slice of it, or its second factor applied to
  // that slice into scratch[i] (all parts in one grouped launch when
  // packing), each with its bias added.
  void packed_second(const DevicePacked& p, float* packed_out, float* const* scratch, float** outputs,
                     cudaStream_t stream);
  GemvConfig gemv_config() const { return GemvConfig{0, 0, options_.pdl}; }
  void capture_graphs(std::vector<GraphExec>& graphs);
  // Copies the token and position a step starts from to the device.
  void set_step_inputs(int32_t token, int pos);
  // Starts sampling steps under `params` (checked): copied to the device when
  // they differ from the last ones, so the sampling graphs are captured once.
  void begin_sampling(const SamplingParams& params);
  // Queues one decode step (capturing its graphs on first use).
  void enqueue_step();
  // The token sampled by the step at `pos`, once that step has completed.
  int32_t published_token(int pos) const { return host_io_->ring[pos % kTokenRing]; }
  // One token through the decode step; its logits land in host_logits_, or,
  // while sampling_ is set, the next token in published_token(pos).
  void decode_token(int32_t token, int pos);
  // Dense mode: the layer's pool.
  KvCacheLayer layer_cache(int layer) const;
  // Prompt chunks through Prefill; logits of every row into `logits` when
  // all_logits, else the last row's head output as decode_token leaves it.
  void prefill(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits);
  // Runs tokens (prefill for several when possible), leaving the last one's
  // result where decode_token does.
  void run_tokens(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits);

  CudaOptions options_;
  ModelConfig config_;
  int context_;
  int filled_ = 0;  // positions [0, filled_) hold valid keys/values
  HeadShape heads_;
  DecodeAttentionPlan attention_plan_;
  std::shared_ptr<const DeviceModel> weights_;
  std::unique_ptr<Prefill> prefill_;  // bf16 weights only; buffers grow with the longest chunk
  Stream stream_;
  std::vector<GraphExec> graphs_;         // logits out; captured on first use
  std::vector<GraphExec> sample_graphs_;  // next token out, by the parameters in params_
  bool sampling_ = false;                 // set during forward_next and decode_stream
  double capture_ms_ = 0;

  // One sequence over blocks of the pool in order: the decode step's block
  // table (the low-rank scratch has as many blocks) and prompt chunks' rows.
  std::unique_ptr<IdentityPages> pages_;
  // Dense mode: per layer, a pool of pages_'s blocks ([blocks * block_size][kv_dim] of the weights' type).
  DeviceBuffer<uint8_t> k_cache_, v_cache_;
  std::unique_ptr<LowRankKv> lowrank_kv_;    // lowrank mode
  DeviceBuffer<float> inv_freq_;
  DeviceBuffer<int32_t> token_;
  DeviceBuffer<int> pos_;
  DeviceBuffer<SamplingParams> params_;  // the sampling step's, read by the kernel at each replay
  // Pinned host memory, mapped for the device: what a step started from the
  // host copies in (params: also what params_ holds), and the sampled tokens
  // by position.
  static constexpr int kTokenRing = 4;
  struct HostIo {
    int32_t token;
    int pos;
    int32_t ring[kTokenRing];
    SamplingParams params;
  };
  PinnedHost<HostIo> host_io_;
  int32_t* device_ring_ = nullptr;  // host_io_->ring as the device addresses it
  Event step_done_[2];              // alternating over a stream's steps
  PinnedHost<float> host_logits_;
  // Activations of one token.
  DeviceBuffer<float> x_, qkv_, q_, k_, v_, att_, attention_work_, rank_, gate_up_, gate_, up_,
      logits_;
};

}  // namespace fsvd::cuda
