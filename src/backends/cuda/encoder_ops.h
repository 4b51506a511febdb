#pragma once
// The encoder's steps around its GEMMs and attention (post-LayerNorm BERT
// layers), over rows of the activation type (bf16, or fp32 for exact checks):
// the embedding sum with its LayerNorm, LayerNorm in place after each
// residual add (which the GEMM epilogue does), and GELU in place after the
// up projection (whose bias the epilogue adds). The arithmetic of the CPU
// twins (cpu::layernorm, cpu::gelu) in fp32.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// The embedding tables of one encoder (rows of stride cols, `type` values);
// `types` has data == nullptr when the model has no token types (DistilBERT).
struct EmbeddingTables {
  DeviceMatrix words, positions, types;
};

// out[r] = layernorm(words[ids[r]] + positions[pos[r]] + types[type_ids[r]])
// with gain w and shift b (fp32), for n rows of width words.cols, stored as
// the tables' type in out (row stride words.cols). ids, pos, type_ids: device
// memory, n entries each (type_ids unused without a type table). One launch.
void embed_layernorm(const int32_t* ids, const int32_t* pos, const int32_t* type_ids, const EmbeddingTables& tables,
                     const float* w, const float* b, float eps, int64_t n, void* out, cudaStream_t stream);

// x[r] = layernorm(x[r]) * w + b in place, n rows of width dim (row stride dim)
// of `type` values; statistics in double as cpu::layernorm. One launch, a warp a row.
void layernorm(void* x, ElementType type, const float* w, const float* b, int64_t n, int64_t dim, float eps,
               cudaStream_t stream);

// x = gelu(x) (the exact erf form, BERT's "gelu") for `count` values of `type`
// in place; x 16-byte aligned. One launch.
void gelu(void* x, ElementType type, int64_t count, cudaStream_t stream);

// fp32 mode's attention, for exact checks (packed_attention in
// flash_attention.h is the bf16 kernel): the same arguments, fp32 rows, one
// CTA per (head, query row) in plain fp32 arithmetic (out may be q, as
// there). Sequences of at most
// max_len <= 8192 rows, `rows` in all (at most 65535).
void attention_f32(const float* q, int64_t ldq, const float* k, const float* v, int64_t ldkv,
                   const int32_t* seq_offsets, int seqs, int max_len, int64_t rows, int n_heads, int head_dim,
                   float* out, int64_t ldo, cudaStream_t stream);

}  // namespace fsvd::cuda
