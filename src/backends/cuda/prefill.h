#pragma once
// The prompt path of the GPU backend: a chunk of n tokens through every layer
// at once — cuBLAS GEMMs for the factor chains, RoPE + KV-cache store for all
// rows in one launch, causal flash attention over the cache. bf16 weights only
// (the fp32 mode runs prompts through the decode step).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_model.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kv_cache.h"
#include "backends/cuda/lowrank_kv.h"

namespace fsvd::cuda {

class Prefill {
 public:
  // `inv_freq`: the RoPE frequencies on the device (head_dim / 2).
  Prefill(const DeviceModel& weights, const float* inv_freq, cudaStream_t stream);

  // Runs tokens at positions [pos, pos + n) (n at most max_rows()) of one
  // sequence, filling their slots of caches[l] for every layer through `rows`
  // (the chunk's positions and the sequence's block table, in device memory);
  // attention reads the sequence's blocks through `blocks` (its block table
  // in device memory), or, when null, the pool as the sequence's dense cache
  // (its blocks in order, IdentityPages: the v GEMM then writes its rows in
  // place); with
  // a low-rank KV cache, its rank rows instead, attending over its scratch
  // cache (rebuilt first for rows before pos). The final hidden states
  // (before the final norm) are left in hidden(): [n, hidden] fp32; with
  // `last_row_only`, only row n - 1's (the last layer's attention output and
  // MLP run for that row alone, all the next token needs; the caches are
  // filled for every row). Enqueued on the stream, not synchronized.
  void run(std::span<const int32_t> tokens, int pos, const std::vector<KvCacheLayer>& caches,
           const PagedRows& rows, const int32_t* blocks, bool last_row_only = false);
  void run(std::span<const int32_t> tokens, int pos, LowRankKv& lowrank, bool last_row_only = false);
  // Logits [n, vocab] fp32 (device memory owned here) of the first n rows of
  // the last run, which must have computed every row; enqueued, not synchronized.
  const float* logits(int64_t n);

  // The decode rows of a batched step through the same GEMMs, in pieces a
  // graph can capture (they read nothing from the host): `rows` tokens of
  // distinct sequences, one new token each, d_tokens and `at` (positions,
  // block tables) in device memory; attention through decode_attention.
  // reserve_rows(rows) first, outside any capture. Then embed_rows, every
  // decode_layer, and logits(rows).
  struct DecodeAttention {
    float* workspace;  // decode_attention's, for `rows` rows of max_ctx
    size_t workspace_floats;
    int max_ctx;
  };
  void reserve_rows(int64_t rows);
  // Changes whenever buffers are reallocated (graphs captured before read the old ones).
  int64_t buffers_version() const { return version_; }
  void embed_rows(const int32_t* d_tokens, int64_t rows);
  void decode_layer(int index, int64_t rows, const KvCacheLayer& cache, const PagedRows& at,
                    const DecodeAttention& attention);
  const float* hidden() const { return x_.data(); }
  static constexpr int64_t max_rows() { return 4096; }

 private:
  void reserve(int64_t n);
  void reserve_logits(int64_t n);  // room for n rows of logits
  // Embeds the chunk; returns its length.
  int64_t start(std::span<const int32_t> tokens, bool last_row_only);
  // One layer over the chunk of n rows, from the attention output on for rows
  // [row0, n) only; `rows`, `blocks` and `lowrank` (or null) as in run(); with
  // `decode`, the rows are decode rows (decode_layer).
  void layer(int index, int pos, int64_t n, int64_t row0, const KvCacheLayer& cache, const PagedRows& rows,
             const int32_t* blocks, LowRankKv* lowrank, const DecodeAttention* decode = nullptr);
  // y (+)= x · linear for a dense or low-rank linear; x bf16 [n, ldx].
  // `in` folds into its first product, `out` into its last (Fold).
  void linear(const DeviceLinear& l, const __nv_bfloat16* x, int64_t ldx, int64_t n, float* y, bool accumulate,
              const Fold& in = {}, const Fold& out = {});
  // hb_ = bf16(rmsnorm(x)) with gain `gain`, n rows of hidden values.
  void norm_rows(const float* x, const float* gain, int64_t n);
  // The RMSNorm of x's n rows with gain `gain` as the next product's input
  // in hb_: normalized here (returns no fold), or, where the product that
  // added to x wrote hb_ = bf16(x · gain), the fold that scales the product.
  Fold norm_input(const float* x, const float* gain, int64_t n);
  // For a product adding to the residual: with `fold`, it also writes hb_ =
  // bf16(x · next_gain) for the norm after it (decode rows up to
  // kSkinnyAnyRows, fold_norms()).
  Fold gained_output(bool fold, const float* next_gain);
  bool fold_norms(int64_t rows, const DeviceLayer& l) const;

  const DeviceModel& weights_;
  const float* inv_freq_;
  cudaStream_t stream_;
  Gemm gemm_;
  int64_t rows_ = 0;  // capacity of the buffers, in tokens
  int64_t version_ = 0;
  int64_t chunk_rows_ = 0, final_row0_ = 0;  // the last run's rows, and its first with a final hidden state
  bool hb_gained_ = false;                    // hb_ holds bf16(x · gain) for the next norm (gained_output)
  DeviceBuffer<int32_t> tokens_;
  // Row strides: packed first-factor outputs (fp32 in packed_, their
  // low-rank parts' columns as bf16 in staged_b_, both at the parts'
  // offsets), and o/down rank-space rows.
  int64_t packed_ld_ = 0, rank_ld_ = 0;
  // q, k and v rows of a low-rank q|k|v side by side ([n, q_dim] then two
  // [n, kv_dim]), where one batched GEMM of stacked second factors writes them.
  DeviceBuffer<float> x_, packed_, qkv_, gate_, up_, logits_;
  DeviceBuffer<__nv_bfloat16> hb_, staged_b_, q_b_, att_b_, rank_b_, act_b_, gate_up_b_;
  DeviceBuffer<float> norm_sums_;  // the residual's sums of squares a folded norm reads (Fold)
};

}  // namespace fsvd::cuda
