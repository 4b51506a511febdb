#include <utility>

#include "backends/op_table/families.h"
#include "backends/op_table/op_case.h"

namespace fsvd::optable {

Tolerance exact(std::string why) { return {Tolerance::Kind::Exact, 0, 0, 0, 0, std::move(why)}; }
Tolerance elementwise(double rel, double abs, std::string why) {
  return {Tolerance::Kind::Elementwise, rel, abs, 0, 0, std::move(why)};
}
Tolerance relative_l2(double rel, std::string why) {
  return {Tolerance::Kind::RelativeL2, rel, 0, 0, 0, std::move(why)};
}

Tolerance subset(std::string why) { return {Tolerance::Kind::Subset, 0, 0, 0, 0, std::move(why)}; }

cuda::Gemm& Device::gemm() {
  if (!gemm_) gemm_ = std::make_unique<cuda::Gemm>(stream_);
  return *gemm_;
}

OpCase::OpCase(std::string op, std::string params, bool timed)
    : op_(std::move(op)), name_(op_ + " " + params), timed_(timed) {}

const Table& op_table() {
  static const Table table = [] {
    Table t;
    add_embedding_cases(t);
    add_norm_cases(t);
    add_token_select_cases(t);
    add_elementwise_cases(t);
    add_kv_store_cases(t);
    add_sampling_cases(t);
    add_gemv_cases(t);
    add_gemm_cases(t);
    add_decode_attention_cases(t);
    add_prefill_attention_cases(t);
    add_encoder_ops_cases(t);
    add_lowrank_kv_cases(t);
    add_synthetic_weights_cases(t);
    return t;
  }();
  return table;
}

const std::vector<std::string>& cuda_ops() {
  static const std::vector<std::string> ops = {
      "embedding_lookup",                                       // embedding.h
      "rmsnorm",                                                // norm.h
      "argmax", "publish_token",                                // token_select.h
      "add_bias", "silu_mul", "stage_bf16",                     // elementwise.h
      "store_row_bf16", "rope_store_kv_rows",                   // kv_store.h
      "sample_tokens",                                          // sampling.h
      "gemv", "gemv_residual", "rmsnorm_gemv", "gemv_grouped",  // gemv.h
      "Gemm::run", "Gemm::run_batched",                         // gemm.h
      "decode_attention",                                       // decode_attention.h
      "prefill_attention", "packed_attention",                  // flash_attention.h
      "embed_layernorm", "layernorm", "gelu", "attention_f32",  // encoder_ops.h
      "LowRankKv::rebuild",  // lowrank_kv.h; its store_rows and store_token fill the cache it reads
      "fill_synthetic",      // synthetic_weights.h
  };
  return ops;
}

}  // namespace fsvd::optable
