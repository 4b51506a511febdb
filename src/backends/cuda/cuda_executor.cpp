#include "backends/cuda/cuda_executor.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <nvtx3/nvtx3.hpp>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/embedding.h"
#include "backends/cuda/flash_attention.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemv.h"
#include "backends/cuda/graph_capture.h"
#include "backends/cuda/sampling.h"
#include "backends/cuda/token_select.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "CudaExecutor";

// Shapes the kernels handle; checked before touching the device.
void check_supported(const ModelConfig& c, const std::string& source) {
  check_head_shape(HeadShape{c.n_heads, c.n_kv_heads, c.head_dim}, source + " (CUDA decode attention)");
  check(c.hidden <= kMaxRmsnormGemvCols, source, "hidden size ", c.hidden,
        " exceeds the CUDA RMSNorm-GEMV limit of ", kMaxRmsnormGemvCols);
}

// The KV cache is the one allocation that scales with the request: refuse it
// before uploading any weights. `positions`: 0 when sized later from free memory.
void check_cache_fits(const ModelConfig& c, int context, int64_t positions, ElementType type, KvMode kv) {
  check(context > 0, kWhere, "context size must be positive, got ", context);
  int devices = 0;
  check(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, kWhere, "no CUDA device");
  if (kv == KvMode::lowrank) return;  // sized by the ranks; an allocation failure names itself
  const double cache_bytes = 2.0 * c.n_layers * positions * c.n_kv_heads * c.head_dim * element_bytes(type);
  size_t free_bytes = 0, total_bytes = 0;
  FSVD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  check(cache_bytes < static_cast<double>(free_bytes), kWhere, "a KV cache of ", positions, " positions needs ",
        cache_bytes / (1 << 30), " GiB; the GPU has ", free_bytes / double(1 << 30), " GiB free");
}

// Buckets of decode rows: 1, 2, 4, ... up to `max` (itself the last).
int bucket_for(int rows, int max) {
  int b = 1;
  while (b < rows) b *= 2;
  return std::min(b, max);
}

std::shared_ptr<const DeviceModel> upload(const Model& model, int context, KvPages pages,
                                          const CudaOptions& options) {
  model.validate();
  check_supported(model.config, model.source);
  check_cache_fits(model.config, context, pages.positions(), kv_cache_type(options, options.weights), options.kv);
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
    : CudaExecutor(model, KvPages::holding(context), context, options) {}

CudaExecutor::CudaExecutor(std::shared_ptr<const DeviceModel> weights, int context, CudaOptions options)
    : CudaExecutor(std::move(weights), KvPages::holding(context), context, options) {}

CudaExecutor::CudaExecutor(const Model& model, KvPages pages, int context, CudaOptions options)
    : CudaExecutor(upload(model, context, pages, options), pages, context, options) {}

CudaExecutor::CudaExecutor(std::shared_ptr<const DeviceModel> weights, KvPages pages, int context,
                           CudaOptions options)
    : options_(options),
      config_(weights->config()),
      context_(context),
      pages_(pages),
      max_blocks_(static_cast<int>(pages.blocks_for(context))),
      rows_(options.max_batch),
      heads_{config_.n_heads, config_.n_kv_heads, config_.head_dim},
      weights_(std::move(weights)) {
  const ModelConfig& c = config_;
  check_supported(c, weights_->source());
  // Several rows a step run as GEMMs with bf16 weights, as batched GEMVs (at
  // most gemv_limits::kMaxBatch) with fp32 or batch_invariant.
  const int most = gemm_rows() ? kMaxDecodeRows : gemv_limits::kMaxBatch;
  check(options.max_batch >= 1 && options.max_batch <= most, kWhere, "max_batch ", options.max_batch,
        " is outside 1..", most, " for ", weights_->type() == ElementType::BF16 ? "bf16" : "fp32", " weights",
        options.batch_invariant ? " (batch-invariant)" : "");
  check(pages.block_size == kDefaultBlockSize, kWhere, "blocks of ", pages.block_size, " positions (the kernels take ",
        kDefaultBlockSize, ")");
  check(options.kv == KvMode::dense || pages.positions() == KvPages::holding(context).positions(), kWhere,
        "the low-rank KV cache holds one sequence");
  const int64_t kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  check(!options.kv_fp8 || options.kv == KvMode::dense, kWhere, "an fp8 KV cache is a dense one (not --kv lowrank)");
  const size_t row_bytes = static_cast<size_t>(kv_dim) * element_bytes(cache_type());
  if (pages_.blocks == 0) {
    // As many blocks as fit in the asked share of what is free now.
    size_t free_bytes = 0, total_bytes = 0;
    FSVD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const double block_bytes = 2.0 * c.n_layers * pages_.block_size * row_bytes;
    pages_.blocks = static_cast<int>(std::min(options.kv_memory * free_bytes / block_bytes, 1e9));
  }
  check(pages_.positions() >= context, kWhere, "a KV cache of ", pages_.positions(),
        " positions (given, or what fits in free GPU memory) cannot hold one sequence's context of ", context);
  check_cache_fits(c, context, pages_.positions(), cache_type(), options_.kv);

  std::vector<float> inv_freq(c.head_dim / 2);
  rope_inv_freq(c, inv_freq.data());
  inv_freq_ = DeviceBuffer<float>(inv_freq.size());
  inv_freq_.upload(inv_freq);
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(stream_.put(), cudaStreamNonBlocking));
  identity_ = std::make_unique<IdentityPages>(context);
  if (options_.kv == KvMode::lowrank) {
    lowrank_kv_ = std::make_unique<LowRankKv>(*weights_, context, inv_freq_.data(), stream_);
  } else {
    const size_t cache_bytes = static_cast<size_t>(c.n_layers) * pages_.positions() * row_bytes;
    k_cache_ = DeviceBuffer<uint8_t>(cache_bytes);
    v_cache_ = DeviceBuffer<uint8_t>(cache_bytes);
  }
  // One workspace a bucket: the layouts of two plans differ, and each
  // launch leaves only its own plan's arrival counters at zero.
  for (int b = 1;; b = std::min(2 * b, rows_)) {
    DeviceBuffer<float>& work = attention_work_[b];
    work = DeviceBuffer<float>(plan_decode_attention(heads_, context, b, options_.batch_invariant).workspace_floats);
    work.zero();  // decode_attention's arrival counters start at zero
    if (b == rows_) break;
  }

  // Activation rows: the widest of every layer (ranks may differ per layer).
  const DeviceLinear& head = weights_->lm_head();
  int64_t max_rank = head.low_rank() ? head.first.rows : 1, qkv_rows = 1, gate_up_rows = 1;
  for (const DeviceLayer& l : weights_->layers()) {
    for (const DeviceLinear* lin : {&l.o, &l.down})
      if (lin->low_rank()) max_rank = std::max(max_rank, lin->first.rows);
    qkv_rows = std::max(qkv_rows, l.qkv.first.rows);
    gate_up_rows = std::max(gate_up_rows, l.gate_up.first.rows);
  }
  qkv_ld_ = round_up8(qkv_rows);
  rank_ld_ = round_up8(max_rank);
  gate_up_ld_ = round_up8(gate_up_rows);
  // One row stride for gate and up whichever buffer holds them (down reads
  // both with one): a dense part's is gate_up_'s, which is then the wider.
  inter_ld_ = std::max<int64_t>(c.intermediate, gate_up_ld_);
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, rows = rows_;
  inputs_ = StepInputs(rows_, max_blocks_);
  blocks_in_order_.resize(max_blocks_);
  for (int b = 0; b < max_blocks_; ++b) blocks_in_order_[b] = b;
  chunk_blocks_ = DeviceBuffer<int32_t>(max_blocks_);
  // The GEMV step's activations: one row where several run through Prefill's buffers.
  const int64_t gemv_rows = gemm_rows() ? 1 : rows;
  x_ = DeviceBuffer<float>(gemv_rows * c.hidden);
  qkv_ = DeviceBuffer<float>(gemv_rows * qkv_ld_);
  q_ = DeviceBuffer<float>(gemv_rows * q_dim);
  k_ = DeviceBuffer<float>(gemv_rows * kv_dim);
  v_ = DeviceBuffer<float>(gemv_rows * kv_dim);
  att_ = DeviceBuffer<float>(gemv_rows * q_dim);
  rank_ = DeviceBuffer<float>(gemv_rows * rank_ld_);
  gate_up_ = DeviceBuffer<float>(gemv_rows * gate_up_ld_);
  gate_ = DeviceBuffer<float>(gemv_rows * inter_ld_);
  up_ = DeviceBuffer<float>(gemv_rows * inter_ld_);
  logits_ = DeviceBuffer<float>(gemv_rows * c.vocab);
  auto pinned = [](auto& p, size_t count, unsigned flags = cudaHostAllocDefault) {
    FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(p.put()), count * sizeof(*p.get()), flags));
  };
  pinned(host_sampled_, rows);
  pinned(host_logits_, rows * c.vocab);
  pinned(ring_, kTokenRing, cudaHostAllocMapped);
  FSVD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_ring_), ring_.get(), 0));
  for (Event& e : step_done_) FSVD_CUDA_CHECK(cudaEventCreateWithFlags(e.put(), cudaEventDisableTiming));
  if (weights_->type() == ElementType::BF16) {
    prefill_ = std::make_unique<Prefill>(*weights_, inv_freq_.data(), stream_);
    if (rows_ > 1 && gemm_rows()) prefill_->reserve_rows(rows_);
  }
  // Prompts of other head sizes run through the decode step, as in fp32.
  prompts_in_chunks_ = prefill_ && prefill_attention_supports(heads_);
}

void CudaExecutor::packed_first(const DevicePacked& p, const float* gain, Rows out, int rows, cudaStream_t stream) {
  const float eps = config_.rms_eps;
  const DeviceVec x = DeviceVec::f32(x_.data(), config_.hidden);
  if (options_.pack) {
    rmsnorm_gemv(p.first, x, gain, eps, {out.p, out.ld}, rows, stream, gemv_config());
    return;
  }
  for (const DevicePacked::Part& part : p.parts)
    rmsnorm_gemv(row_slice(p.first, part.offset, part.offset + part.rows), x, gain, eps,
                 {out.p + part.offset, out.ld}, rows, stream, gemv_config());
}

void CudaExecutor::packed_second(const DevicePacked& p, Rows packed_out, const Rows* scratch, Rows* outputs,
                                 int rows, cudaStream_t stream) {
  GemvGroup groups[kMaxGemvGroups];
  int count = 0;
  for (size_t i = 0; i < p.parts.size(); ++i) {
    const DevicePacked::Part& part = p.parts[i];
    outputs[i] = {packed_out.p + part.offset, packed_out.ld};
    if (part.second.data) {
      groups[count++] = {part.second, DeviceVec::f32(outputs[i].p, outputs[i].ld), {scratch[i].p, scratch[i].ld}};
      outputs[i] = scratch[i];
    }
  }
  if (options_.pack) {
    if (count > 0) gemv_grouped(groups, count, rows, stream, gemv_config());
  } else {
    for (int i = 0; i < count; ++i) gemv_grouped(&groups[i], 1, rows, stream, gemv_config());
  }
  for (size_t i = 0; i < p.parts.size(); ++i) {
    const DevicePacked::Part& part = p.parts[i];
    const int64_t n = part.second.data ? part.second.rows : part.rows;
    if (part.bias) add_bias(outputs[i].p, outputs[i].ld, part.bias, rows, n, stream);
  }
}

void CudaExecutor::linear_residual(const DeviceLinear& l, DeviceVec x, int rows, cudaStream_t stream) {
  const GemvConfig cfg = gemv_config();
  const DeviceOut y{x_.data(), config_.hidden};
  if (l.low_rank()) {
    gemv(l.first, x, {rank_.data(), rank_ld_}, rows, stream, cfg);
    gemv_residual(l.second, DeviceVec::f32(rank_.data(), rank_ld_), y, rows, stream, cfg);
  } else {
    gemv_residual(l.first, x, y, rows, stream, cfg);
  }
  if (l.bias) add_bias(x_.data(), config_.hidden, l.bias, rows, l.out(), stream);
}

KvCacheLayer CudaExecutor::layer_cache(int layer) const {
  const ElementType type = cache_type();
  const int64_t offset =
      int64_t{layer} * pages_.positions() * config_.n_kv_heads * config_.head_dim * element_bytes(type);
  return {k_cache_.data() + offset, v_cache_.data() + offset, pages_.block_size, pages_.blocks, type};
}

void CudaExecutor::enqueue_layer(int index, int rows, cudaStream_t stream) {
  const ModelConfig& c = config_;
  const DeviceLayer& l = weights_->layers()[index];
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, kv_dim = int64_t{c.n_kv_heads} * c.head_dim;

  // Attention block: one GEMV over the packed q|k|v first factors (RMSNorm
  // fused), the parts' second factors, then RoPE, cache append and attention.
  packed_first(l.qkv, l.attn_norm, {qkv_.data(), qkv_ld_}, rows, stream);
  Rows qkv[3];
  const Rows qkv_scratch[3] = {{q_.data(), q_dim}, {k_.data(), kv_dim}, {v_.data(), kv_dim}};
  packed_second(l.qkv, {qkv_.data(), qkv_ld_}, qkv_scratch, qkv, rows, stream);
  KvCacheLayer cache;
  PagedRows at{inputs_.device_pos(), nullptr, inputs_.device_tables(), max_blocks_};
  if (lowrank_kv_) {
    // Append the token's rank-space k and v, rebuild the whole context (the
    // graph's shape stays fixed; rows past the token are never read).
    lowrank_kv_->store_token(index, qkv_.data() + l.qkv.parts[1].offset, qkv_.data() + l.qkv.parts[2].offset,
                             inputs_.device_pos());
    lowrank_kv_->rebuild(index, context_);
    cache = lowrank_kv_->scratch();
    at = identity_->token(inputs_.device_pos());
  } else {
    cache = layer_cache(index);
  }
  decode_attention({qkv[0].p, qkv[1].p, qkv[2].p, qkv[0].ld, qkv[1].ld, qkv[2].ld}, inv_freq_.data(), cache, at,
                   rows, context_, heads_, attention_work_.at(rows).data(), attention_work_.at(rows).size(), att_.data(), stream,
                   options_.pdl, options_.batch_invariant);
  linear_residual(l.o, DeviceVec::f32(att_.data(), q_dim), rows, stream);

  // MLP block: packed gate|up first factors (RMSNorm fused), their second
  // factors, and down (its input silu(gate)·up formed as it is staged) added
  // to the residual.
  packed_first(l.gate_up, l.mlp_norm, {gate_up_.data(), gate_up_ld_}, rows, stream);
  Rows gate_up[2];
  const Rows gate_up_scratch[2] = {{gate_.data(), inter_ld_}, {up_.data(), inter_ld_}};
  packed_second(l.gate_up, {gate_up_.data(), gate_up_ld_}, gate_up_scratch, gate_up, rows, stream);
  linear_residual(l.down, DeviceVec::silu_mul(gate_up[0].p, gate_up[1].p, gate_up[0].ld), rows, stream);
}

void CudaExecutor::enqueue_piece(int piece, int rows, cudaStream_t stream) {
  const ModelConfig& c = config_;
  // Several rows with bf16 weights: the prompt path's GEMMs (skinny_gemm up
  // to 8 rows and for first factors up to 32, cuBLASLt otherwise: both
  // faster than the GEMVs from two rows on, bench/kernels/gemv_notes.md and
  // docs/benchmarks.md).
  const bool gemm = rows > 1 && gemm_rows();
  if (piece == 0) {
    if (gemm)
      prefill_->embed_rows(inputs_.device_tokens(), rows);
    else
      embedding_lookup(weights_->embed(), inputs_.device_tokens(), rows, x_.data(), stream);
  } else if (piece <= c.n_layers && gemm) {
    prefill_->decode_layer(piece - 1, rows, layer_cache(piece - 1),
                           {inputs_.device_pos(), nullptr, inputs_.device_tables(), max_blocks_},
                           {attention_work_.at(rows).data(), attention_work_.at(rows).size(), context_});
  } else if (piece <= c.n_layers) {
    enqueue_layer(piece - 1, rows, stream);
  } else {
    float* logits = logits_.data();
    if (gemm) {
      logits = const_cast<float*>(prefill_->logits(rows));
    } else {
      // Final RMSNorm fused into lm_head's first GEMV.
      const DeviceLinear& head = weights_->lm_head();
      const GemvConfig cfg = gemv_config();
      const DeviceVec x = DeviceVec::f32(x_.data(), c.hidden);
      const DeviceOut out{logits, c.vocab};
      if (head.low_rank()) {
        rmsnorm_gemv(head.first, x, weights_->final_norm(), c.rms_eps, {rank_.data(), rank_ld_}, rows, stream, cfg);
        gemv(head.second, DeviceVec::f32(rank_.data(), rank_ld_), out, rows, stream, cfg);
      } else {
        rmsnorm_gemv(head.first, x, weights_->final_norm(), c.rms_eps, out, rows, stream, cfg);
      }
      if (head.bias) add_bias(logits, c.vocab, head.bias, rows, c.vocab, stream);
    }
    if (sampling_) {
      // Parameters and the draw's key (the token's position) are read on the device.
      sample_tokens(logits, rows, c.vocab, c.vocab, inputs_.device_params(), inputs_.device_pos(),
                    inputs_.device_tokens(), stream);
      publish_token(inputs_.device_tokens(), inputs_.device_pos(), device_ring_, kTokenRing, stream);
      if (rows > 1)
        FSVD_CUDA_CHECK(cudaMemcpyAsync(host_sampled_, inputs_.device_tokens(), rows * sizeof(int32_t),
                                        cudaMemcpyDeviceToHost, stream));
    } else {
      FSVD_CUDA_CHECK(cudaMemcpyAsync(host_logits_, logits, rows * c.vocab * sizeof(float), cudaMemcpyDeviceToHost,
                                      stream));
    }
  }
}

namespace {

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

void CudaExecutor::capture_graphs(std::vector<GraphExec>& graphs, int rows) {
  const auto start = std::chrono::steady_clock::now();
  const int pieces = piece_count();
  const int groups = options_.graph == GraphMode::model ? 1 : pieces;
  for (int g = 0; g < groups; ++g) {
    const Graph graph = capture_graph(stream_, [&] {
      if (groups == 1)
        for (int p = 0; p < pieces; ++p) enqueue_piece(p, rows, stream_);
      else
        enqueue_piece(g, rows, stream_);
    });
    GraphExec exec;
    FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), graph, 0));
    graphs.push_back(std::move(exec));
  }
  capture_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

ExecutorStats CudaExecutor::stats() {
  ExecutorStats st;
  st.device = device_name();
  st.weight_bytes = weights_->bytes_uploaded();
  st.cache_bytes = lowrank_kv_ ? lowrank_kv_->bytes() : k_cache_.bytes() + v_cache_.bytes();
  size_t free_bytes = 0, total_bytes = 0;
  FSVD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  st.device_used_bytes = total_bytes - free_bytes;
  // Counted from a capture of a whole one-row step (not run): the kernels are
  // the same in every mode, only how the host launches them differs.
  const Graph graph = capture_graph(stream_, [&] {
    for (int p = 0; p < piece_count(); ++p) enqueue_piece(p, 1, stream_);
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
  inputs_.token(0) = token;
  inputs_.pos(0) = pos;
  inputs_.set_table(0, blocks_in_order_);
  inputs_.upload(stream_);
}

void CudaExecutor::begin_sampling(const SamplingParams& params) {
  check_sampling_params(params);
  inputs_.params(0) = params;  // copied with the step's inputs
  sampling_ = true;
}

void CudaExecutor::enqueue_step(int rows) {
  // A named range, so a profiler can take a decode step's kernels alone:
  // `ncu --nvtx --nvtx-include "decode step/"` (docs/benchmarks.md).
  nvtx3::scoped_range range{"decode step"};
  if (options_.graph == GraphMode::none) {
    for (int p = 0; p < piece_count(); ++p) enqueue_piece(p, rows, stream_);
    return;
  }
  if (prefill_ && prefill_->buffers_version() != prefill_version_) {
    // The GEMM steps' graphs read Prefill's buffers, which a longer prompt has reallocated.
    for (auto* by_rows : {&graphs_, &sample_graphs_}) std::erase_if(*by_rows, [](const auto& g) { return g.first > 1; });
    prefill_version_ = prefill_->buffers_version();
  }
  std::vector<GraphExec>& graphs = (sampling_ ? sample_graphs_ : graphs_)[rows];
  if (graphs.empty()) capture_graphs(graphs, rows);
  for (const GraphExec& g : graphs) FSVD_CUDA_CHECK(cudaGraphLaunch(g, stream_));
}

void CudaExecutor::decode_token(int32_t token, int pos) {
  set_step_inputs(token, pos);
  enqueue_step(1);
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::prefill(std::span<const int32_t> tokens, int pos, const int32_t* blocks, bool all_logits,
                           std::vector<float>& logits) {
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
    else if (blocks)
      prefill_->run(tokens.subspan(done, n), chunk_pos, caches, identity_->chunk(chunk_pos, blocks, max_blocks_),
                    blocks, last_row_only);
    else
      prefill_->run(tokens.subspan(done, n), chunk_pos, caches, identity_->chunk(chunk_pos), nullptr, last_row_only);
    if (all_logits)
      FSVD_CUDA_CHECK(cudaMemcpyAsync(logits.data() + done * vocab, prefill_->logits(static_cast<int64_t>(n)),
                                      n * vocab * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    done += n;
    if (done == tokens.size() && !all_logits) {
      // The last row's hidden state (and position) through the decode step's head, as row 0.
      FSVD_CUDA_CHECK(cudaMemcpyAsync(x_.data(), prefill_->hidden() + (n - 1) * config_.hidden,
                                      config_.hidden * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
      inputs_.pos(0) = pos + static_cast<int>(tokens.size()) - 1;
      inputs_.upload(stream_);
      enqueue_piece(piece_count() - 1, 1, stream_);
    }
  }
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::run_tokens(std::span<const int32_t> tokens, int pos, bool all_logits,
                              std::vector<float>& logits) {
  const size_t n = tokens.size(), vocab = static_cast<size_t>(config_.vocab);
  filled_ = pos;  // until the step completes, the cache holds at most [0, pos)
  if (n > 1 && prompts_in_chunks_) {
    prefill(tokens, pos, nullptr, all_logits, logits);
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
      enqueue_step(1);
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

void CudaExecutor::step(std::span<const SeqSlice> batch, std::vector<float>& logits) {
  run_step(batch, {}, &logits, nullptr);
}

void CudaExecutor::step_sample(std::span<const SeqSlice> batch, std::span<const SamplingParams> params,
                               std::vector<int32_t>& tokens) {
  run_step(batch, params, nullptr, &tokens);
}

void CudaExecutor::decode_rows(std::span<const DecodeRow> rows) {
  const int n = static_cast<int>(rows.size()), bucket = bucket_for(n, rows_);
  // The previous step has completed: the pinned inputs are free to change.
  for (int r = 0; r < bucket; ++r) {
    const bool real = r < n;
    inputs_.token(r) = real ? rows[r].token : 0;
    inputs_.pos(r) = real ? rows[r].pos : -1;  // a padding row
    if (sampling_) inputs_.params(r) = real ? rows[r].params : SamplingParams{};
    inputs_.set_table(r, real ? rows[r].blocks : std::span<const int32_t>{});
  }
  inputs_.upload(stream_);
  enqueue_step(bucket);
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaExecutor::run_step(std::span<const SeqSlice> batch, std::span<const SamplingParams> params,
                            std::vector<float>* logits, std::vector<int32_t>* tokens) {
  const char* where = tokens ? "CudaExecutor::step_sample" : "CudaExecutor::step";
  check_step_request(where, batch, pages_, context_, config_.vocab);
  check(!lowrank_kv_, where, "the low-rank KV cache holds one sequence (--kv dense for batched steps)");
  size_t outputs = 0;
  for (const SeqSlice& s : batch) {
    check(!tokens || s.output != StepOutput::all, where, "a sampling step returns one token a sequence");
    outputs += s.output == StepOutput::last;
  }
  if (tokens) {
    check(params.size() == outputs, where, params.size(), " sampling parameters for ", outputs, " outputs");
    for (const SamplingParams& p : params) check_sampling_params(p);
  }
  filled_ = 0;  // forward()'s sequence is gone: the step may write any block
  sampling_ = tokens != nullptr;
  const size_t vocab = static_cast<size_t>(config_.vocab);
  std::vector<std::vector<float>> slice_logits(batch.size());
  std::vector<int32_t> slice_token(batch.size(), -1);
  std::vector<SamplingParams> slice_params(batch.size());
  for (size_t i = 0, k = 0; i < batch.size(); ++i)
    if (tokens && batch[i].output == StepOutput::last) slice_params[i] = params[k++];

  try {
    // Prompt chunks one by one through Prefill.
    std::vector<size_t> next(batch.size(), 0);  // each slice's first token not yet run
    for (size_t i = 0; i < batch.size() && prompts_in_chunks_; ++i) {
      const SeqSlice& s = batch[i];
      if (s.tokens.size() < 2) continue;
      chunk_blocks_.upload(s.blocks.first(std::min<size_t>(s.blocks.size(), max_blocks_)));
      if (sampling_) {
        inputs_.params(0) = slice_params[i];  // copied with the last row's position
      }
      const bool all = s.output == StepOutput::all;
      if (all) slice_logits[i].resize(s.tokens.size() * vocab);
      prefill(s.tokens, s.pos, chunk_blocks_.data(), all, slice_logits[i]);
      const int last_pos = s.pos + static_cast<int>(s.tokens.size()) - 1;
      if (s.output == StepOutput::last && sampling_) slice_token[i] = published_token(last_pos);
      if (s.output == StepOutput::last && !sampling_)
        slice_logits[i].assign(host_logits_.get(), host_logits_.get() + vocab);
      next[i] = s.tokens.size();
    }

    // The other tokens as decode rows: each wave takes every slice's next
    // token (one row a sequence), in steps of up to rows_ rows.
    std::vector<DecodeRow> rows;
    std::vector<size_t> owner;
    for (bool more = true; more;) {
      rows.clear();
      owner.clear();
      for (size_t i = 0; i < batch.size(); ++i) {
        const SeqSlice& s = batch[i];
        if (next[i] == s.tokens.size()) continue;
        rows.push_back({s.tokens[next[i]], s.pos + static_cast<int>(next[i]), s.blocks, slice_params[i]});
        owner.push_back(i);
      }
      more = !rows.empty();
      for (size_t first = 0; first < rows.size(); first += rows_) {
        const size_t n = std::min<size_t>(rows_, rows.size() - first);
        decode_rows(std::span(rows).subspan(first, n));
        for (size_t r = 0; r < n; ++r) {
          const size_t i = owner[first + r];
          const SeqSlice& s = batch[i];
          const bool last = ++next[i] == s.tokens.size();
          if (s.output == StepOutput::all)
            slice_logits[i].insert(slice_logits[i].end(), host_logits_.get() + r * vocab,
                                   host_logits_.get() + (r + 1) * vocab);
          else if (last && s.output == StepOutput::last && !sampling_)
            slice_logits[i].assign(host_logits_.get() + r * vocab, host_logits_.get() + (r + 1) * vocab);
          else if (last && s.output == StepOutput::last)
            slice_token[i] = n == 1 ? published_token(rows[first + r].pos) : host_sampled_.get()[r];
        }
      }
    }
  } catch (...) {
    cudaStreamSynchronize(stream_);
    sampling_ = false;
    throw;
  }
  sampling_ = false;

  if (tokens) {
    tokens->clear();
    for (size_t i = 0; i < batch.size(); ++i)
      if (batch[i].output == StepOutput::last) tokens->push_back(slice_token[i]);
  } else {
    logits->clear();
    for (const std::vector<float>& l : slice_logits) logits->insert(logits->end(), l.begin(), l.end());
  }
}

}  // namespace fsvd::cuda
