#pragma once
// The low-rank KV cache (--kv lowrank): per layer, each position's k and v are
// kept in rank space (the k/v first factors' outputs, bf16), and every step
// rebuilds that layer's dense, RoPE'd K and V over the context into one
// scratch cache that all layers share. This is FlashSVD v1's memory-saving
// path, which the dense cache replaces: kept as an ablation and as the option
// for contexts whose dense cache would not fit. bf16 weights only; every
// layer's k and v must be factorized.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_model.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/identity_pages.h"
#include "backends/cuda/kv_cache.h"

namespace fsvd::cuda {

class LowRankKv {
 public:
  // For `context` positions; inv_freq: the RoPE frequencies on the device.
  // Throws Error when the weights are not bf16 or a layer's k or v is dense.
  LowRankKv(const DeviceModel& weights, int context, const float* inv_freq, cudaStream_t stream);

  // Stores the decode token's rank-space k and v (fp32, the packed first
  // factor's output parts) of `layer` at row *d_pos (no row when outside the context).
  void store_token(int layer, const float* k_rank, const float* v_rank, const int* d_pos);
  // Stores n prompt rows at positions [pos, pos + n): bf16 rank-space k and v
  // with row stride ld (prefill's staging layout).
  void store_rows(int layer, const __nv_bfloat16* k_rank, const __nv_bfloat16* v_rank, int64_t ld, int pos,
                  int64_t n);
  // Rebuilds rows [0, rows) of the layer's K (RoPE'd) and V into scratch().
  void rebuild(int layer, int rows);
  // The cache attention reads (a pool of pages().num_blocks() blocks in
  // order, so dense): valid for one layer at a time.
  KvCacheLayer scratch() const;
  const IdentityPages& pages() const { return pages_; }
  // Device bytes: rank caches, the scratch cache and the rebuild's fp32 rows.
  size_t bytes() const;

 private:
  struct Layer {
    DeviceBuffer<__nv_bfloat16> k, v;  // [context][ld_k], [context][ld_v], zero padding
    int64_t ld_k = 0, ld_v = 0;
  };
  const DeviceModel& weights_;
  int context_;
  const float* inv_freq_;
  cudaStream_t stream_;
  Gemm gemm_;
  IdentityPages pages_;
  std::vector<Layer> layers_;
  DeviceBuffer<float> k_rows_, v_rows_;              // [context][kv_dim] fp32: the rebuild's GEMM outputs
  DeviceBuffer<__nv_bfloat16> k_scratch_, v_scratch_;  // [blocks * block_size][kv_dim]
};

}  // namespace fsvd::cuda
