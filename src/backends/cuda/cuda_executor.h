#pragma once
// The GPU backend: a model's weights on the device (DeviceModel), a KV cache
// for the requested context (one sequence over a paged pool, its blocks in
// order), and a decode step built from the kernels
// of this folder (fp32 activations and accumulation), replayed as CUDA
// graphs. Logits come back as fp32 on the host.
#include <cuda_runtime_api.h>

#include <map>
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
#include "backends/cuda/step_inputs.h"
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

constexpr int kMaxDecodeRows = 256;

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
  // A dense cache of fp8 e4m3 values (half bf16's bytes: twice the positions
  // in the same memory, half the bytes a decode step's attention reads),
  // rounded to nearest even as they are stored; the math stays fp32.
  bool kv_fp8 = false;
  // Decode rows of one step (sequences of step() beyond it run in several):
  // up to kMaxDecodeRows with bf16 weights (several rows run as GEMMs), up to
  // kMaxBatch with fp32 or batch_invariant (batched GEMVs). Graphs are
  // captured per bucket of 1, 2, 4, ... rows, a step padded to the next.
  int max_batch = 1;
  // Each decode row's result bitwise what it is alone: bf16 rows of every
  // bucket through the batched GEMVs on fp32 activations (the GEMMs round
  // activations to bf16), planned as one row (GemvConfig::batch_invariant),
  // and decode attention sliced as for one row.
  bool batch_invariant = false;
  // With no block count given: the share of the GPU memory free once the
  // weights are up that the KV cache takes.
  double kv_memory = 0.9;
};

// The KV cache's element for weights of type `weights`: fp8 when asked, else theirs.
inline ElementType kv_cache_type(const CudaOptions& options, ElementType weights) {
  return options.kv_fp8 ? ElementType::F8E4M3 : weights;
}

class CudaExecutor : public Executor {
 public:
  // `model` must be packed (Model::pack); it is read only here. One sequence:
  // the KV cache holds `context` positions (not the model's max_seq), in
  // blocks taken in order. Throws Error for shapes the kernels do not support
  // (head_dim other than 64, 80, 96, 128 or 256, hidden above 8192) or a
  // cache that does not fit in free GPU memory. Prompts go through Prefill
  // with bf16 weights and head_dim 64 or 128, through decode steps otherwise.
  CudaExecutor(const Model& model, int context, CudaOptions options = {});
  // Runs weights already on the device (a synthetic model, say).
  CudaExecutor(std::shared_ptr<const DeviceModel> weights, int context, CudaOptions options = {});
  // Many sequences (step, step_sample), each at most `context` positions, over
  // a cache of pages.blocks blocks of pages.block_size (16) positions; 0
  // blocks: as many as fit in options.kv_memory of the free memory.
  CudaExecutor(const Model& model, KvPages pages, int context, CudaOptions options);
  CudaExecutor(std::shared_ptr<const DeviceModel> weights, KvPages pages, int context, CudaOptions options);
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  KvPages kv_pages() const override { return pages_; }
  // Prompt chunks (slices of several tokens) run one by one through Prefill,
  // then the one-token slices together in decode steps of up to
  // options.max_batch rows (with fp32 weights, prompts too, a row a step).
  void step(std::span<const SeqSlice> batch, std::vector<float>& logits) override;
  void step_sample(std::span<const SeqSlice> batch, std::span<const SamplingParams> params,
                   std::vector<int32_t>& tokens) override;
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
  // The decode step of `rows` rows (a bucket) in pieces: 0 looks up the
  // embeddings of the tokens in token_ (at the positions in pos_), 1..n_layers
  // are the layers, n_layers + 1 is the head and then the copy of the logits
  // out, or, while sampling_ is set, the tokens sampled into token_ by the
  // parameters in params_, row 0's published to the host ring (pos_[0] moves
  // on: the next step of a stream needs nothing from the host) and the rest
  // copied out. One graph per piece in layer mode.
  int piece_count() const { return config_.n_layers + 2; }
  void enqueue_piece(int piece, int rows, cudaStream_t stream);
  void enqueue_layer(int index, int rows, cudaStream_t stream);
  // A matrix of activations in device memory: row r at p + r * ld.
  struct Rows {
    float* p;
    int64_t ld;
  };
  // out = rmsnorm(x) through p's first factors (packed, or part by part).
  void packed_first(const DevicePacked& p, const float* gain, Rows out, int rows, cudaStream_t stream);
  // The parts' outputs of a packed projection whose first factors wrote
  // packed_out: a dense part's slice of it, or its second factor applied to
  // that slice into scratch[i] (all parts in one grouped launch when
  // packing), each with its bias added.
  void packed_second(const DevicePacked& p, Rows packed_out, const Rows* scratch, Rows* outputs, int rows,
                     cudaStream_t stream);
  // y += linear(x) over `rows` rows; rank_ holds a low-rank linear's rank-space rows.
  void linear_residual(const DeviceLinear& l, DeviceVec x, int rows, cudaStream_t stream);
  GemvConfig gemv_config() const { return GemvConfig{0, 0, options_.pdl, 0, options_.batch_invariant}; }
  void capture_graphs(std::vector<GraphExec>& graphs, int rows);
  // Queues the copy of the token and position a one-sequence step starts
  // from as row 0 (its block table the pool's blocks in order).
  void set_step_inputs(int32_t token, int pos);
  // Starts sampling steps under `params` (checked) in row 0, copied to the
  // device with the first step's inputs.
  void begin_sampling(const SamplingParams& params);
  // Queues one decode step of `rows` rows (capturing its graphs on first use).
  void enqueue_step(int rows);
  // The token sampled by the step at `pos`, once that step has completed.
  int32_t published_token(int pos) const { return ring_.get()[pos % kTokenRing]; }
  // One token through the decode step; its logits land in host_logits_, or,
  // while sampling_ is set, the next token in published_token(pos).
  void decode_token(int32_t token, int pos);
  // Dense mode: the layer's pool.
  KvCacheLayer layer_cache(int layer) const;
  // Prompt chunks of one sequence through Prefill (its blocks: `blocks` in
  // device memory, null for the pool's blocks in order); logits of every row
  // into `logits` when all_logits, else the last row's head output as
  // decode_token leaves it.
  void prefill(std::span<const int32_t> tokens, int pos, const int32_t* blocks, bool all_logits,
               std::vector<float>& logits);
  // Runs tokens (prefill for several when possible), leaving the last one's
  // result where decode_token does.
  void run_tokens(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits);
  // step() and step_sample(): `params` per slice whose output is `last`
  // (sampling), or empty (logits); the results appended in slice order.
  void run_step(std::span<const SeqSlice> batch, std::span<const SamplingParams> params, std::vector<float>* logits,
                std::vector<int32_t>* tokens);
  // One decode row of a step: a token at a position of a sequence.
  struct DecodeRow {
    int32_t token;
    int pos;
    std::span<const int32_t> blocks;
    SamplingParams params;
  };
  // Runs `rows` (at most rows_, distinct sequences) as one decode step, padded
  // to its bucket; row r's logits land in host_logits_ row r, or its sampled
  // token in published_token(pos) for one row, host_sampled_[r] for several.
  void decode_rows(std::span<const DecodeRow> rows);

  CudaOptions options_;
  ModelConfig config_;
  int context_;
  KvPages pages_;
  int max_blocks_;  // block-table entries of one sequence (context_ in blocks)
  int rows_;        // decode rows of one step
  int filled_ = 0;  // forward(): positions [0, filled_) hold valid keys/values
  HeadShape heads_;
  std::shared_ptr<const DeviceModel> weights_;
  // bf16 weights only: prompt chunks (head_dim 64 and 128: prompts_in_chunks_)
  // and decode steps of several rows (gemm_rows). Its buffers grow with the longest chunk.
  std::unique_ptr<Prefill> prefill_;
  bool gemm_rows() const { return weights_->type() == ElementType::BF16 && !options_.batch_invariant; }
  ElementType cache_type() const { return kv_cache_type(options_, weights_->type()); }
  bool prompts_in_chunks_ = false;
  int64_t prefill_version_ = 0;  // of Prefill's buffers when the GEMM steps' graphs were captured
  Stream stream_;
  // Captured on first use, by bucket: logits out, and tokens sampled.
  std::map<int, std::vector<GraphExec>> graphs_, sample_graphs_;
  bool sampling_ = false;  // set while steps sample
  double capture_ms_ = 0;

  // The pool's blocks in order: forward()'s sequence, the low-rank scratch
  // (as many blocks), and the positions of prompt chunks' rows.
  std::unique_ptr<IdentityPages> identity_;
  // Dense mode: per layer, a pool of pages_ ([blocks * block_size][kv_dim] of the weights' type).
  DeviceBuffer<uint8_t> k_cache_, v_cache_;
  std::unique_ptr<LowRankKv> lowrank_kv_;  // lowrank mode
  DeviceBuffer<float> inv_freq_;
  // The rows of a decode step: token, position (< 0: a padding row), block
  // table and sampling parameters.
  StepInputs inputs_;
  std::vector<int32_t> blocks_in_order_;  // a block table of the pool's blocks in order
  DeviceBuffer<int32_t> chunk_blocks_;  // a prompt chunk's block table (step)
  PinnedHost<int32_t> host_sampled_;
  // Mapped pinned memory: row 0's sampled tokens by position.
  static constexpr int kTokenRing = 4;
  PinnedHost<int32_t> ring_;
  int32_t* device_ring_ = nullptr;  // ring_ as the device addresses it
  Event step_done_[2];              // alternating over a stream's steps
  PinnedHost<float> host_logits_;   // [rows_, vocab]
  // The GEMV step's activations, of rows_ rows (one with bf16 weights), row
  // strides: hidden, qkv_ld_, q_dim, kv_dim, q_dim, rank_ld_, gate_up_ld_,
  // inter_ld_, inter_ld_, vocab.
  int64_t qkv_ld_ = 0, rank_ld_ = 0, gate_up_ld_ = 0, inter_ld_ = 0;
  DeviceBuffer<float> x_, qkv_, q_, k_, v_, att_, rank_, gate_up_, gate_, up_, logits_;
  std::map<int, DeviceBuffer<float>> attention_work_;  // decode_attention's, by bucket
};

}  // namespace fsvd::cuda
