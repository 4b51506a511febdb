#pragma once
// Each op family's cases, added to the table by op_table() (explicit calls:
// a static library drops self-registering objects nothing references).
#include "backends/op_table/op_case.h"

namespace fsvd::optable {

// One per source of src/backends/cuda, named after it.
void add_embedding_cases(Table& t);          // embedding_lookup
void add_norm_cases(Table& t);               // rmsnorm
void add_token_select_cases(Table& t);       // argmax, publish_token
void add_elementwise_cases(Table& t);        // add_bias, silu_mul, stage_bf16
void add_kv_store_cases(Table& t);           // store_row_bf16, rope_store_kv_rows
void add_sampling_cases(Table& t);           // sample_tokens
void add_gemv_cases(Table& t);               // gemv, gemv_residual, rmsnorm_gemv, gemv_grouped
void add_gemm_cases(Table& t);               // Gemm::run, Gemm::run_batched
void add_decode_attention_cases(Table& t);   // decode_attention
void add_prefill_attention_cases(Table& t);  // prefill_attention (flash_attention.h)
void add_encoder_ops_cases(Table& t);        // embed_layernorm, layernorm, gelu, attention_f32, packed_attention
void add_lowrank_kv_cases(Table& t);         // LowRankKv::rebuild
void add_synthetic_weights_cases(Table& t);  // fill_synthetic

}  // namespace fsvd::optable
