#include "backends/cuda/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/embedding.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemv.h"
#include "backends/cuda/prefill_attention.h"
#include "backends/cuda/sampling.h"
#include "backends/cuda/token_select.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "CudaExecutor";

// y += linear(x); `rank` holds the rank-space vector of a low-rank linear.
void linear_residual(const DeviceLinear& l, DeviceVec x, float* rank, float* y, GemvConfig cfg,
                     cudaStream_t stream) {
  if (l.low_rank()) {
    gemv(l.first, x, {rank}, 1, stream, cfg);
    gemv_residual(l.second, DeviceVec::f32(rank), {y}, 1, stream, cfg);
  } else {
    gemv_residual(l.first, x, {y}, 1, stream, cfg);
  }
  if (l.bias) add_bias(y, l.out(), l.bias, 1, l.out(), stream);
}

// Shapes the kernels handle; checked before touching the device.
void check_supported(const ModelConfig& c, const std::string& source) {
  check_head_shape(HeadShape{c.n_heads, c.n_kv_heads, c.head_dim}, source + " (CUDA decode attention)");
  check(c.hidden <= kMaxRmsnormGemvCols, source, "hidden size ", c.hidden,
        " exceeds the CUDA RMSNorm-GEMV limit of ", kMaxRmsnormGemvCols);
}

// Positions the cache holds for `context`: whole blocks.
int64_t cache_rows(int context) { return ceil_div(context, kDefaultBlockSize) * kDefaultBlockSize; }

// The KV cache is the one allocation that scales with the request: refuse it
// before uploading any weights.
void check_cache_fits(const ModelConfig& c, int context, ElementType type, KvMode kv) {
  check(context > 0, kWhere, "context size must be positive, got ", context);
  int devices = 0;
  check(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, kWhere, "no CUDA device");
  if (kv == KvMode::lowrank) return;  // sized by the ranks; an allocation failure names itself
  const double cache_bytes =
      2.0 * c.n_layers * cache_rows(context) * c.n_kv_heads * c.head_dim * element_bytes(type);
  size_t free_bytes = 0, total_bytes = 0;
  FSVD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  check(cache_bytes < static_cast<double>(free_bytes), kWhere, "a KV cache for context ", context, " needs ",
        cache_bytes / (1 << 30), " GiB; the GPU has ", free_bytes / double(1 << 30), " GiB free");
}

std::shared_ptr<const DeviceModel> upload(const Model& model, int context, const CudaOptions& options) {
  model.validate();
  check_supported(model.config, model.source);
  check_cache_fits(model.config, context, options.weights, options.kv);
  return std::make_shared<const DeviceModel>(model, options.weights);
}

}  // namespace

GraphMode parse_graph_mode(const std::string& name) {
  for (GraphMode m : {GraphMode::none, GraphMode::layer, GraphMode::model})
    if (name == graph_mode_name(m)) return m;
  fail("--graph", "unknown graph mode '", name, "' (expected none, layer or model)");
}

KvMode parse_kv_mode(const std::string& name) {
  if (name == "dense") return KvMode::dense;
  if (name == "lowrank") return KvMode::lowrank;
  fail("--kv", "unknown KV cache mode '", name, "' (expected dense or lowrank)");
}

const char* graph_mode_name(GraphMode mode) {
  switch (mode) {
    case GraphMode::none: return "none";
    case GraphMode::layer: return "layer";
    case GraphMode::model: return "model";
  }
  return "?";
}

CudaExecutor::CudaExecutor(const Model& model, int context, CudaOptions options)
    : CudaExecutor(upload(model, context, options), context, options) {}

CudaExecutor::CudaExecutor(std::shared_ptr<const DeviceModel> weights, int context, CudaOptions options)
    : options_(options),
      config_(weights->config()),
      context_(context),
      heads_{config_.n_heads, config_.n_kv_heads, config_.head_dim},
      weights_(std::move(weights)) {
  const ModelConfig& c = config_;
  check_supported(c, weights_->source());
  check_cache_fits(c, context, weights_->type(), options_.kv);

  const int64_t kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  std::vector<float> inv_freq(c.head_dim / 2);
  rope_inv_freq(c, inv_freq.data());
  inv_freq_ = DeviceBuffer<float>(inv_freq.size());
  inv_freq_.upload(inv_freq);
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(stream_.put(), cudaStreamNonBlocking));
  pages_ = std::make_unique<IdentityPages>(context);
  if (options_.kv == KvMode::lowrank) {
    lowrank_kv_ = std::make_unique<LowRankKv>(*weights_, context, inv_freq_.data(), stream_);
  } else {
    const int64_t cache_bytes = int64_t{c.n_layers} * cache_rows(context) * kv_dim * element_bytes(weights_->type());
    k_cache_ = DeviceBuffer<uint8_t>(cache_bytes);
    v_cache_ = DeviceBuffer<uint8_t>(cache_bytes);
  }
  attention_plan_ = plan_decode_attention(heads_, context, 1);

  // Activation sizes: the widest of every layer (ranks may differ per layer).
  const DeviceLinear& head = weights_->lm_head();
  int64_t max_rank = head.low_rank() ? head.first.rows : 1, qkv_rows = 1, gate_up_rows = 1;
  for (const DeviceLayer& l : weights_->layers()) {
    for (const DeviceLinear* lin : {&l.o, &l.down})
      if (lin->low_rank()) max_rank = std::max(max_rank, lin->first.rows);
    qkv_rows = std::max(qkv_rows, l.qkv.first.rows);
    gate_up_rows = std::max(gate_up_rows, l.gate_up.first.rows);
  }
  token_ = DeviceBuffer<int32_t>(1);
  pos_ = DeviceBuffer<int>(1);
  params_ = DeviceBuffer<SamplingParams>(1);
  x_ = DeviceBuffer<float>(c.hidden);
  qkv_ = DeviceBuffer<float>(qkv_rows);
  q_ = DeviceBuffer<float>(int64_t{c.n_heads} * c.head_dim);
  k_ = DeviceBuffer<float>(kv_dim);
  v_ = DeviceBuffer<float>(kv_dim);
  att_ = DeviceBuffer<float>(int64_t{c.n_heads} * c.head_dim);
  attention_work_ = DeviceBuffer<float>(attention_plan_.workspace_floats);
  attention_work_.zero();  // decode_attention's arrival counters start at zero
  rank_ = DeviceBuffer<float>(max_rank);
  gate_up_ = DeviceBuffer<float>(gate_up_rows);
  gate_ = DeviceBuffer<float>(c.intermediate);
  up_ = DeviceBuffer<float>(c.intermediate);
  logits_ = DeviceBuffer<float>(c.vocab);
  FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(host_io_.put()), sizeof(HostIo), cudaHostAllocMapped));
  FSVD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_ring_), host_io_->ring, 0));
  host_io_->params = SamplingParams{};
  params_.upload(std::span(&host_io_->params, 1));
  for (Event& e : step_done_) FSVD_CUDA_CHECK(cudaEventCreateWithFlags(e.put(), cudaEventDisableTiming));
  FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(host_logits_.put()), c.vocab * sizeof(float),
                                cudaHostAllocDefault));
  // Prompts of other head sizes run through the decode step, as in fp32.
  if (weights_->type() == ElementType::BF16 && prefill_attention_supports(heads_))
    prefill_ = std::make_unique<Prefill>(*weights_, inv_freq_.data(), stream_);
}

void CudaExecutor::packed_first(const DevicePacked& p, const float* gain, float* out, cudaStream_t stream) {
  const float eps = config_.rms_eps;
  if (options_.pack) {
    rmsnorm_gemv(p.first, DeviceVec::f32(x_.data()), gain, eps, {out}, 1, stream, gemv_config());
    return;
  }
  for (const DevicePacked::Part& part : p.parts)
    rmsnorm_gemv(row_slice(p.first, part.offset, part.offset + part.rows), DeviceVec::f32(x_.data()), gain, eps,
                 {out + part.offset}, 1, stream, gemv_config());
}

void CudaExecutor::packed_second(const DevicePacked& p, float* packed_out, float* const* scratch,
                                 float** outputs, cudaStream_t stream) {
  GemvGroup groups[kMaxGemvGroups];
  int count = 0;
  for (size_t i = 0; i < p.parts.size(); ++i) {
    const DevicePacked::Part& part = p.parts[i];
    outputs[i] = packed_out + part.offset;
    if (part.second.data) {
      groups[count++] = {part.second, DeviceVec::f32(outputs[i]), {scratch[i]}};
      outputs[i] = scratch[i];
    }
  }
  if (options_.pack) {
    if (count > 0) gemv_grouped(groups, count, 1, stream, gemv_config());
  } else {
    for (int i = 0; i < count; ++i) gemv_grouped(&groups[i], 1, 1, stream, gemv_config());
  }
  for (size_t i = 0; i < p.parts.size(); ++i) {
    const DevicePacked::Part& part = p.parts[i];
    const int64_t n = part.second.data ? part.second.rows : part.rows;
    if (part.bias) add_bias(outputs[i], n, part.bias, 1, n, stream);
  }
}

KvCacheLayer CudaExecutor::layer_cache(int layer) const {
  const ElementType type = weights_->type();
  const int64_t offset =
      int64_t{layer} * cache_rows(context_) * config_.n_kv_heads * config_.head_dim * element_bytes(type);
  return pages_->pool(k_cache_.data() + offset, v_cache_.data() + offset, type);
}

void CudaExecutor::enqueue_layer(int index, cudaStream_t stream) {
  const DeviceLayer& l = weights_->layers()[index];

  // Attention block: one GEMV over the packed q|k|v first factors (RMSNorm
  // fused), the parts' second factors, then RoPE, cache append and attention.
  const GemvConfig cfg = gemv_config();
  packed_first(l.qkv, l.attn_norm, qkv_.data(), stream);
  float* qkv[3];
  float* const qkv_scratch[3] = {q_.data(), k_.data(), v_.data()};
  packed_second(l.qkv, qkv_.data(), qkv_scratch, qkv, stream);
  KvCacheLayer cache;
  if (lowrank_kv_) {
    // Append the token's rank-space k and v, rebuild the whole context (the
    // graph's shape stays fixed; rows past the token are never read).
    lowrank_kv_->store_token(index, qkv_.data() + l.qkv.parts[1].offset, qkv_.data() + l.qkv.parts[2].offset,
                             pos_.data());
    lowrank_kv_->rebuild(index, context_);
    cache = lowrank_kv_->scratch();
  } else {
    cache = layer_cache(index);
  }
  // One row (this sequence's token at *pos_); its q, k, v rows are whole vectors.
  const int64_t q_dim = int64_t{config_.n_heads} * config_.head_dim;
  const int64_t kv_dim = int64_t{config_.n_kv_heads} * config_.head_dim;
  decode_attention({qkv[0], qkv[1], qkv[2], q_dim, kv_dim, kv_dim}, inv_freq_.data(), cache,
                   pages_->token(pos_.data()), 1, context_, heads_, attention_work_.data(), attention_work_.size(),
                   att_.data(), stream, options_.pdl);
  linear_residual(l.o, DeviceVec::f32(att_.data()), rank_.data(), x_.data(), cfg, stream);

  // MLP block: packed gate|up first factors (RMSNorm fused), their second
  // factors, and down (its input silu(gate)·up formed as it is staged) added
  // to the residual.
  packed_first(l.gate_up, l.mlp_norm, gate_up_.data(), stream);
  float* gate_up[2];
  float* const gate_up_scratch[2] = {gate_.data(), up_.data()};
  packed_second(l.gate_up, gate_up_.data(), gate_up_scratch, gate_up, stream);
  linear_residual(l.down, DeviceVec::silu_mul(gate_up[0], gate_up[1]), rank_.data(), x_.data(), cfg, stream);
}

void CudaExecutor::enqueue_piece(int piece, cudaStream_t stream) {
  const ModelConfig& c = config_;
  if (piece == 0) {
    embedding_lookup(weights_->embed(), token_.data(), 1, x_.data(), stream);
  } else if (piece <= c.n_layers) {
    enqueue_layer(piece - 1, stream);
  } else {
    // Final RMSNorm fused into lm_head's first GEMV.
    const DeviceLinear& head = weights_->lm_head();
    const GemvConfig cfg = gemv_config();
    if (head.low_rank()) {
      rmsnorm_gemv(head.first, DeviceVec::f32(x_.data()), weights_->final_norm(), c.rms_eps, {rank_.data()}, 1,
                   stream, cfg);
      gemv(head.second, DeviceVec::f32(rank_.data()), {logits_.data()}, 1, stream, cfg);
    } else {
      rmsnorm_gemv(head.first, DeviceVec::f32(x_.data()), weights_->final_norm(), c.rms_eps, {logits_.data()}, 1,
                   stream, cfg);
    }
    if (head.bias) add_bias(logits_.data(), c.vocab, head.bias, 1, c.vocab, stream);
    if (sampling_) {
      // Parameters and the draw's key (the token's position) are read on the device.
      sample_tokens(logits_.data(), 1, c.vocab, c.vocab, params_.data(), pos_.data(), token_.data(), stream);
      publish_token(token_.data(), pos_.data(), device_ring_, kTokenRing, stream);
    } else {
      FSVD_CUDA_CHECK(cudaMemcpyAsync(host_logits_, logits_.data(), c.vocab * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream));
    }
  }
}

namespace {

// Captures what `enqueue` puts on `stream` into a graph (not run).
template <typename Enqueue>
Graph capture(cudaStream_t stream, Enqueue&& enqueue) {
  // Relaxed: the launchers may query or set function attributes while capturing.
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  Graph graph;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream, graph.put());  // ends the capture; the partial graph is dropped
    throw;
  }
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, graph.put()));
  return graph;
}

int count_kernels(cudaGraph_t graph) {
  size_t n = 0;
  FSVD_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  FSVD_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  int kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    FSVD_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    kernels += type == cudaGraphNodeTypeKernel;
  }
  return kernels;
}

}  // namespace

void CudaExecutor::capture_graphs(std::vector<GraphExec>& graphs) {
  const auto start = std::chrono::steady_clock::now();
  const int pieces = piece_count();
  const int groups = options_.graph == GraphMode::model ? 1 : pieces;
  for (int g = 0; g < groups; ++g) {
    const Graph graph = capture(stream_, [&] {
      if (groups == 1)
        for (int p = 0; p < pieces; ++p) enqueue_piece(p, stream_);
      else
        enqueue_piece(g, stream_);
    });
    GraphExec exec;
    FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), graph, 0));
    graphs.push_back(std::move(exec));
  }
  capture_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

ExecutorStats CudaExecutor::stats() {
  ExecutorStats st;
  int device = 0;
  cudaDeviceProp prop{};
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  st.device = std::string("cuda: ") + prop.name;
  st.weight_bytes = weights_->bytes_uploaded();
  st.cache_bytes = lowrank_kv_ ? lowrank_kv_->bytes() : k_cache_.bytes() + v_cache_.bytes();
  size_t free_bytes = 0, total_bytes = 0;
  FSVD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  st.device_used_bytes = total_bytes - free_bytes;
  // Counted from a capture of the whole step (not run): the kernels are the
  // same in every mode, only how the host launches them differs.
  const Graph graph = capture(stream_, [&] {
    for (int p = 0; p < piece_count(); ++p) enqueue_piece(p, stream_);
  });
  st.kernels_per_token = count_kernels(graph);
  // The logits out; a step started from the host (not one of a decode
  // stream) also copies its token and position in.
  constexpr int kCopies = 1;
  st.launches_per_token = options_.graph == GraphMode::none    ? st.kernels_per_token + kCopies
                          : options_.graph == GraphMode::layer ? piece_count()
                                                               : 1;
  st.capture_ms = capture_ms_;
  return st;
}

void CudaExecutor::set_step_inputs(int32_t token, int pos) {
  // The previous step has completed (every caller synchronizes before
  // returning), so the pinned inputs are free to change.
  host_io_->token = token;
  host_io_->pos = pos;
  FSVD_CUDA_CHECK(cudaMemcpyAsync(token_.data(), &host_io_->token, sizeof(int32_t), cudaMemcpyHostToDevice,
                                  stream_));
  FSVD_CUDA_CHECK(cudaMemcpyAsync(pos_.data(), &host_io_->pos, sizeof(int), cudaMemcpyHostToDevice, stream_));
}

void CudaExecutor::begin_sampling(const SamplingParams& params) {
  check_sampling_params(params);
  // As for the step inputs, the previous step has completed: the pinned copy is free.
  if (params != host_io_->params) {
    host_io_->params = params;
    FSVD_CUDA_CHECK(cudaMemcpyAsync(params_.data(), &host_io_->params, sizeof(SamplingParams),
                                    cudaMemcpyHostToDevice, stream_));
  }
  sampling_ = true;
}

void CudaExecutor::enqueue_step() {
  if (options_.graph == GraphMode::none) {
    for (int p = 0; p < piece_count(); ++p) enqueue_piece(p, stream_);
    return;
  }
  std::vector<GraphExec>& graphs = sampling_ ? sample_graphs_ : graphs_;
  if (graphs.empty()) capture_graphs(graphs);
  for (const GraphExec& g : graphs) FSVD_CUDA_CHECK(cudaGraphLaunch(g, stream_));
}

void CudaExecutor::decode_token(int32_t token, int pos) {
  set_step_inputs(token, pos);
  enqueue_step();
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::prefill(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits) {
  std::vector<KvCacheLayer> caches;
  if (!lowrank_kv_)
    for (int l = 0; l < config_.n_layers; ++l) caches.push_back(layer_cache(l));
  const size_t vocab = static_cast<size_t>(config_.vocab);
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min<size_t>(tokens.size() - done, Prefill::max_rows());
    const int chunk_pos = pos + static_cast<int>(done);
    // Without all logits, only the prompt's last row needs a final hidden state.
    const bool last_row_only = !all_logits && done + n == tokens.size();
    if (lowrank_kv_)
      prefill_->run(tokens.subspan(done, n), chunk_pos, *lowrank_kv_, last_row_only);
    else
      prefill_->run(tokens.subspan(done, n), chunk_pos, caches, pages_->chunk(chunk_pos), nullptr, last_row_only);
    if (all_logits)
      FSVD_CUDA_CHECK(cudaMemcpyAsync(logits.data() + done * vocab, prefill_->logits(static_cast<int64_t>(n)),
                                      n * vocab * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    done += n;
    if (done == tokens.size() && !all_logits) {
      // The last row's hidden state (and position) through the decode step's head.
      FSVD_CUDA_CHECK(cudaMemcpyAsync(x_.data(), prefill_->hidden() + (n - 1) * config_.hidden,
                                      config_.hidden * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
      host_io_->pos = pos + static_cast<int>(tokens.size()) - 1;
      FSVD_CUDA_CHECK(cudaMemcpyAsync(pos_.data(), &host_io_->pos, sizeof(int), cudaMemcpyHostToDevice, stream_));
      enqueue_piece(piece_count() - 1, stream_);
    }
  }
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::run_tokens(std::span<const int32_t> tokens, int pos, bool all_logits,
                              std::vector<float>& logits) {
  const size_t n = tokens.size(), vocab = static_cast<size_t>(config_.vocab);
  filled_ = pos;  // until the step completes, the cache holds at most [0, pos)
  if (n > 1 && prefill_) {
    prefill(tokens, pos, all_logits, logits);
  } else {
    for (size_t i = 0; i < n; ++i) {
      decode_token(tokens[i], pos + static_cast<int>(i));
      if (all_logits) std::copy(host_logits_.get(), host_logits_.get() + vocab, logits.data() + i * vocab);
    }
  }
  filled_ = pos + static_cast<int>(n);
}

int32_t CudaExecutor::forward_next(std::span<const int32_t> tokens, int pos, const SamplingParams& params) {
  check_forward_request("CudaExecutor::forward_next", tokens, pos, filled_, context_, config_.vocab);
  begin_sampling(params);
  std::vector<float> unused;
  try {
    run_tokens(tokens, pos, false, unused);
  } catch (...) {
    sampling_ = false;
    throw;
  }
  sampling_ = false;
  return published_token(pos + static_cast<int>(tokens.size()) - 1);
}

int CudaExecutor::decode_stream(int32_t token, int pos, int count, const SamplingParams& params,
                                const std::function<bool(int32_t)>& on_token) {
  const char* where = "CudaExecutor::decode_stream";
  check(count >= 1, where, "count ", count, " must be positive");
  check_forward_request(where, std::span(&token, 1), pos, filled_, context_, config_.vocab);
  check(count <= context_ - pos, where, count, " steps from position ", pos, " exceed the context size ", context_);
  begin_sampling(params);
  filled_ = pos;
  int handed = 0;
  try {
    set_step_inputs(token, pos);
    // Step i runs at pos + i and is queued while step i - 1's token travels
    // to the host. A step queued past a stop runs for nothing: its cache row
    // lies past filled_.
    auto queue = [&](int i) {
      enqueue_step();
      FSVD_CUDA_CHECK(cudaEventRecord(step_done_[i % 2], stream_));
    };
    queue(0);
    for (bool more = true; more && handed < count; ++handed) {
      if (handed + 1 < count) queue(handed + 1);
      FSVD_CUDA_CHECK(cudaEventSynchronize(step_done_[handed % 2]));
      filled_ = pos + handed + 1;
      more = on_token(published_token(pos + handed));
    }
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  } catch (...) {
    cudaStreamSynchronize(stream_);
    sampling_ = false;
    throw;
  }
  sampling_ = false;
  return handed;
}

void CudaExecutor::forward(std::span<const int32_t> tokens, int pos, bool all_logits,
                           std::vector<float>& logits) {
  const char* where = "CudaExecutor::forward";
  check_forward_request(where, tokens, pos, filled_, context_, config_.vocab);

  const size_t n = tokens.size(), vocab = static_cast<size_t>(config_.vocab);
  logits.resize((all_logits ? n : 1) * vocab);
  run_tokens(tokens, pos, all_logits, logits);
  if (!all_logits) std::copy(host_logits_.get(), host_logits_.get() + vocab, logits.data());
}

}  // namespace fsvd::cuda
