#include "backends/cuda/lowrank_kv.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/kv_store.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "--kv lowrank";

const DevicePacked::Part& k_part(const DeviceLayer& l) { return l.qkv.parts[1]; }
const DevicePacked::Part& v_part(const DeviceLayer& l) { return l.qkv.parts[2]; }

}  // namespace

LowRankKv::LowRankKv(const DeviceModel& weights, int context, const float* inv_freq, cudaStream_t stream)
    : weights_(weights), context_(context), inv_freq_(inv_freq), stream_(stream), gemm_(stream), pages_(context) {
  check(weights.type() == ElementType::BF16, kWhere, "needs bf16 weights (not --precision fp32)");
  const ModelConfig& c = weights.config();
  const int64_t kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  for (size_t i = 0; i < weights.layers().size(); ++i) {
    const DeviceLayer& l = weights.layers()[i];
    check(k_part(l).second.data && v_part(l).second.data, kWhere, "layer ", i,
          " has a dense k or v projection; the low-rank KV cache needs both factorized");
    Layer& out = layers_.emplace_back();
    out.ld_k = round_up8(k_part(l).rows);
    out.ld_v = round_up8(v_part(l).rows);
    out.k = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(context) * out.ld_k);
    out.v = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(context) * out.ld_v);
    out.k.zero();  // the padding columns the rebuild's GEMM reads, and rows not yet stored
    out.v.zero();
  }
  k_rows_ = DeviceBuffer<float>(static_cast<size_t>(context) * kv_dim);
  v_rows_ = DeviceBuffer<float>(k_rows_.size());
  k_scratch_ = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(pages_.num_blocks()) * pages_.block_size() * kv_dim);
  v_scratch_ = DeviceBuffer<__nv_bfloat16>(k_scratch_.size());
}

void LowRankKv::store_token(int layer, const float* k_rank, const float* v_rank, const int* d_pos) {
  const Layer& l = layers_.at(layer);
  const DeviceLayer& w = weights_.layers()[layer];
  store_row_bf16(k_rank, k_part(w).rows, d_pos, context_, l.k.data(), l.ld_k, stream_);
  store_row_bf16(v_rank, v_part(w).rows, d_pos, context_, l.v.data(), l.ld_v, stream_);
}

void LowRankKv::store_rows(int layer, const __nv_bfloat16* k_rank, const __nv_bfloat16* v_rank, int64_t ld,
                           int pos, int64_t n) {
  const Layer& l = layers_.at(layer);
  const DeviceLayer& w = weights_.layers()[layer];
  check(pos >= 0 && pos + n <= context_, kWhere, "rows [", pos, ", ", pos + n, ") outside a context of ",
        context_);
  constexpr size_t kBf16 = sizeof(__nv_bfloat16);
  FSVD_CUDA_CHECK(cudaMemcpy2DAsync(l.k.data() + pos * l.ld_k, l.ld_k * kBf16, k_rank, ld * kBf16,
                                    k_part(w).rows * kBf16, n, cudaMemcpyDeviceToDevice, stream_));
  FSVD_CUDA_CHECK(cudaMemcpy2DAsync(l.v.data() + pos * l.ld_v, l.ld_v * kBf16, v_rank, ld * kBf16,
                                    v_part(w).rows * kBf16, n, cudaMemcpyDeviceToDevice, stream_));
}

void LowRankKv::rebuild(int layer, int rows) {
  check(rows >= 0 && rows <= context_, kWhere, "rebuild of ", rows, " rows in a context of ", context_);
  if (rows == 0) return;
  const Layer& l = layers_.at(layer);
  const DeviceLayer& w = weights_.layers()[layer];
  const ModelConfig& c = weights_.config();
  const int64_t kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  gemm_.run(padded_k(k_part(w).second), l.k.data(), l.ld_k, rows, k_rows_.data(), kv_dim, ElementType::F32);
  gemm_.run(padded_k(v_part(w).second), l.v.data(), l.ld_v, rows, v_rows_.data(), kv_dim, ElementType::F32);
  if (k_part(w).bias) add_bias(k_rows_.data(), kv_dim, k_part(w).bias, rows, kv_dim, stream_);
  if (v_part(w).bias) add_bias(v_rows_.data(), kv_dim, v_part(w).bias, rows, kv_dim, stream_);
  rope_store_kv_rows({nullptr, k_rows_.data(), v_rows_.data(), 0, kv_dim, kv_dim}, inv_freq_, pages_.chunk(0), rows,
                     HeadShape{c.n_heads, c.n_kv_heads, c.head_dim}, scratch(), nullptr, stream_);
}

KvCacheLayer LowRankKv::scratch() const {
  return pages_.pool(k_scratch_.data(), v_scratch_.data(), ElementType::BF16);
}

size_t LowRankKv::bytes() const {
  size_t total = k_rows_.bytes() + v_rows_.bytes() + k_scratch_.bytes() + v_scratch_.bytes();
  for (const Layer& l : layers_) total += l.k.bytes() + l.v.bytes();
  return total;
}

}  // namespace fsvd::cuda
