#pragma once
// Each op family's cases, added to the table by op_table() (explicit calls:
// a static library drops self-registering objects nothing references).
#include "backends/op_table/op_case.h"

namespace fsvd::optable {

void add_small_op_cases(Table& t);    // embedding_lookup, rmsnorm, argmax, publish_token
void add_row_op_cases(Table& t);      // add_bias, silu_mul, store_row_bf16, stage_bf16
void add_sampling_cases(Table& t);    // sample_token
void add_gemv_cases(Table& t);        // gemv, gemv_residual, rmsnorm_gemv, gemv_grouped
void add_gemm_cases(Table& t);        // Gemm::run, Gemm::run_batched
void add_decode_attention_cases(Table& t);
void add_prefill_cases(Table& t);     // rope_store_kv_rows, prefill_attention
void add_lowrank_kv_cases(Table& t);  // LowRankKv::rebuild
void add_synthetic_cases(Table& t);   // fill_synthetic

}  // namespace fsvd::optable
