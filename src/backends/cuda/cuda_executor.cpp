#include "backends/cuda/cuda_executor.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/gemv.h"
#include "backends/cuda/rope_kv.h"
#include "backends/cuda/small_ops.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "CudaExecutor";
constexpr int64_t kMaxNormCols = 8192;  // rmsnorm_gemv's limit on its input width

// The output of one part of a packed projection: its slice of the packed
// first-factor output when dense, else the second factor applied to that
// slice into `scratch`; the bias is added in place either way.
float* part_output(const DevicePacked::Part& part, float* packed_out, float* scratch,
                   cudaStream_t stream) {
  float* out = packed_out + part.offset;
  int64_t n = part.rows;
  if (part.second.data) {
    gemv(part.second, DeviceVec::f32(out), scratch, stream);
    out = scratch;
    n = part.second.rows;
  }
  if (part.bias) add_bias(out, part.bias, n, stream);
  return out;
}

// y += linear(x); `rank` holds the rank-space vector of a low-rank linear.
void linear_residual(const DeviceLinear& l, const float* x, float* rank, float* y,
                     cudaStream_t stream) {
  if (l.low_rank()) {
    gemv(l.first, DeviceVec::f32(x), rank, stream);
    gemv_residual(l.second, DeviceVec::f32(rank), y, stream);
  } else {
    gemv_residual(l.first, DeviceVec::f32(x), y, stream);
  }
  if (l.bias) add_bias(y, l.bias, l.low_rank() ? l.second.rows : l.first.rows, stream);
}

}  // namespace

CudaExecutor::CudaExecutor(const Model& model, int context)
    : config_(model.config),
      context_(context),
      heads_{model.config.n_heads, model.config.n_kv_heads, model.config.head_dim} {
  const ModelConfig& c = config_;
  model.validate();
  check_head_shape(heads_, model.source + " (CUDA decode attention)");
  check(c.hidden <= kMaxNormCols, model.source, "hidden size ", c.hidden,
        " exceeds the CUDA RMSNorm-GEMV limit of ", kMaxNormCols);
  check(context > 0, kWhere, "context size must be positive, got ", context);
  int devices = 0;
  check(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, kWhere, "no CUDA device");

  // The cache is the one allocation that scales with the request: refuse it
  // up front rather than after uploading the weights.
  const int64_t kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  const int64_t cache_elems = int64_t{c.n_layers} * context * kv_dim;
  const double cache_bytes = 2.0 * cache_elems * sizeof(__nv_bfloat16);
  size_t free_bytes = 0, total_bytes = 0;
  FSVD_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  check(cache_bytes < static_cast<double>(free_bytes), kWhere, "a KV cache for context ", context,
        " needs ", cache_bytes / (1 << 30), " GiB; the GPU has ", free_bytes / double(1 << 30),
        " GiB free");

  weights_ = std::make_unique<DeviceModel>(model);
  k_cache_ = DeviceBuffer<__nv_bfloat16>(cache_elems);
  v_cache_ = DeviceBuffer<__nv_bfloat16>(cache_elems);
  attention_plan_ = plan_decode_attention(heads_, context);

  std::vector<float> inv_freq(c.head_dim / 2);
  rope_inv_freq(c, inv_freq.data());
  inv_freq_ = DeviceBuffer<float>(inv_freq.size());
  inv_freq_.upload(inv_freq);

  int64_t max_rank = std::max<int64_t>(1, model.lm_head.rank());
  for (const Layer& l : model.layers)
    max_rank = std::max({max_rank, l.o.rank(), l.down.rank()});
  const Layer& first = model.layers.front();
  token_ = DeviceBuffer<int32_t>(1);
  pos_ = DeviceBuffer<int>(1);
  x_ = DeviceBuffer<float>(c.hidden);
  qkv_ = DeviceBuffer<float>(first.qkv.first.dim(0));
  q_ = DeviceBuffer<float>(int64_t{c.n_heads} * c.head_dim);
  k_ = DeviceBuffer<float>(kv_dim);
  v_ = DeviceBuffer<float>(kv_dim);
  att_ = DeviceBuffer<float>(int64_t{c.n_heads} * c.head_dim);
  attention_work_ = DeviceBuffer<float>(std::max<size_t>(attention_plan_.workspace_floats, 1));
  rank_ = DeviceBuffer<float>(max_rank);
  gate_up_ = DeviceBuffer<float>(first.gate_up.first.dim(0));
  gate_ = DeviceBuffer<float>(c.intermediate);
  up_ = DeviceBuffer<float>(c.intermediate);
  logits_ = DeviceBuffer<float>(c.vocab);
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaExecutor::~CudaExecutor() {
  if (stream_) cudaStreamDestroy(stream_);  // no throwing from a destructor
}

void CudaExecutor::enqueue_layer(int index, cudaStream_t stream) {
  const ModelConfig& c = config_;
  const DeviceLayer& l = weights_->layers()[index];
  const int64_t layer_offset = int64_t{index} * context_ * c.n_kv_heads * c.head_dim;
  const KvCacheLayer cache{k_cache_.data() + layer_offset, v_cache_.data() + layer_offset, context_};

  // Attention block: one GEMV over the packed q|k|v first factors (RMSNorm
  // fused), each part's second factor, then RoPE + cache append.
  rmsnorm_gemv(l.qkv.first, x_.data(), l.attn_norm, c.rms_eps, qkv_.data(), stream);
  float* q = part_output(l.qkv.parts[0], qkv_.data(), q_.data(), stream);
  float* k = part_output(l.qkv.parts[1], qkv_.data(), k_.data(), stream);
  float* v = part_output(l.qkv.parts[2], qkv_.data(), v_.data(), stream);
  rope_store_kv(q, k, v, inv_freq_.data(), pos_.data(), heads_, cache, stream);
  decode_attention(q, cache, pos_.data(), heads_, attention_work_.data(), attention_work_.size(),
                   att_.data(), stream);
  linear_residual(l.o, att_.data(), rank_.data(), x_.data(), stream);

  // MLP block: packed gate|up first factors (RMSNorm fused), silu(gate)·up,
  // down added to the residual.
  rmsnorm_gemv(l.gate_up.first, x_.data(), l.mlp_norm, c.rms_eps, gate_up_.data(), stream);
  const DevicePacked::Part &gate = l.gate_up.parts[0], &up = l.gate_up.parts[1];
  if (l.gate_up_second.data) {
    gemv_silu_mul(l.gate_up_second, DeviceVec::f32(gate_up_.data() + gate.offset),
                  DeviceVec::f32(gate_up_.data() + up.offset), gate_.data(), stream);
  } else {
    const float* g = part_output(gate, gate_up_.data(), gate_.data(), stream);
    const float* u = part_output(up, gate_up_.data(), up_.data(), stream);
    silu_mul(g, u, gate_.data(), c.intermediate, stream);
  }
  linear_residual(l.down, gate_.data(), rank_.data(), x_.data(), stream);
}

void CudaExecutor::enqueue_decode_step(cudaStream_t stream) {
  const ModelConfig& c = config_;
  embedding_lookup(weights_->embed(), c.vocab, c.hidden, token_.data(), x_.data(), stream);
  for (int l = 0; l < c.n_layers; ++l) enqueue_layer(l, stream);
  // Final RMSNorm fused into lm_head's first GEMV.
  const DeviceLinear& head = weights_->lm_head();
  if (head.low_rank()) {
    rmsnorm_gemv(head.first, x_.data(), weights_->final_norm(), c.rms_eps, rank_.data(), stream);
    gemv(head.second, DeviceVec::f32(rank_.data()), logits_.data(), stream);
  } else {
    rmsnorm_gemv(head.first, x_.data(), weights_->final_norm(), c.rms_eps, logits_.data(), stream);
  }
  if (head.bias) add_bias(logits_.data(), head.bias, c.vocab, stream);
}

void CudaExecutor::forward(std::span<const int32_t> tokens, int pos, bool all_logits,
                           std::vector<float>& logits) {
  const char* where = "CudaExecutor::forward";
  check_forward_request(where, tokens, pos, filled_, context_, config_.vocab);

  const size_t n = tokens.size(), vocab = static_cast<size_t>(config_.vocab);
  logits.resize((all_logits ? n : 1) * vocab);
  filled_ = pos;  // until the step completes, the cache holds at most [0, pos)
  // First version: the prompt runs token by token through the decode step
  // (a cuBLAS GEMM + causal attention prefill is the next step). The host
  // values are copied from pageable memory, which cudaMemcpyAsync stages
  // before returning, so the locals may change for the next token.
  for (size_t i = 0; i < n; ++i) {
    const int32_t token = tokens[i];
    const int p = pos + static_cast<int>(i);
    FSVD_CUDA_CHECK(cudaMemcpyAsync(token_.data(), &token, sizeof token, cudaMemcpyHostToDevice, stream_));
    FSVD_CUDA_CHECK(cudaMemcpyAsync(pos_.data(), &p, sizeof p, cudaMemcpyHostToDevice, stream_));
    enqueue_decode_step(stream_);
    if (all_logits || i + 1 == n) {
      float* row = logits.data() + (all_logits ? i * vocab : 0);
      FSVD_CUDA_CHECK(cudaMemcpyAsync(row, logits_.data(), vocab * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
    }
  }
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  filled_ = pos + static_cast<int>(n);
}

}  // namespace fsvd::cuda
