// Cases of the low-rank KV cache (--kv lowrank): a prompt's rank-space k and
// v rows stored (store_rows), the decode token's appended (store_token), and
// the layer's dense K (RoPE'd) and V rebuilt over the context (rebuild), on a
// one-layer synthetic model. The reference: the rank rows as stored (bf16)
// times the k and v second factors (cpu::matmul_nt), cpu::rope on K, bf16.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/linear_ops.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/device_model.h"
#include "backends/cuda/lowrank_kv.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "model/model.h"
#include "model/synthetic.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr ElementType kBf16 = ElementType::BF16;

// One layer of heads x head_dim, its linears at `keep` (ranks spread when
// `spread` > 0, so k and v differ); the MLP and vocabulary minimal.
SyntheticSpec one_layer(int heads, int kv_heads, int head_dim, double keep, double spread, int context) {
  ModelConfig c;
  c.hidden = heads * head_dim;
  c.intermediate = 16;
  c.n_layers = 1;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.vocab = 16;
  c.max_seq = context;
  return SyntheticSpec{"op-table", c, keep, 7, spread};
}

class LowRankRebuild final : public OpCase {
 public:
  LowRankRebuild(SyntheticSpec spec, int context, int len, std::string model)
      : OpCase("LowRankKv::rebuild",
               "heads=" + to_string(spec.config.n_heads) + "/" + to_string(spec.config.n_kv_heads) +
                   " hd=" + to_string(spec.config.head_dim) + " ranks=" + to_string(rank(spec, SyntheticWeight::k)) +
                   "," + to_string(rank(spec, SyntheticWeight::v)) + " ctx=" + to_string(context) +
                   " len=" + to_string(len) + (model.empty() ? "" : " " + model),
               !model.empty()),
        spec_(std::move(spec)), context_(context), len_(len), kv_dim_(spec_.config.kv_dim()),
        rank_k_(rank(spec_, SyntheticWeight::k)), rank_v_(rank(spec_, SyntheticWeight::v)) {}

  std::vector<Expected> reference() const override {
    const Model m = make_synthetic_model(spec_);
    std::vector<float> inv(spec_.config.head_dim / 2);
    rope_inv_freq(spec_.config, inv.data());
    std::vector<float> k = rebuilt(m.layers[0].k, rank_k_, 121), v = rebuilt(m.layers[0].v, rank_v_, 123);
    cpu::rope(k.data(), len_, kv_dim_, spec_.config.n_kv_heads, spec_.config.head_dim, 0, inv.data());
    return {{"K", as_stored(k, kBf16), tolerance(rank_k_)}, {"V", as_stored(v, kBf16), tolerance(rank_v_)}};
  }

  std::unique_ptr<DeviceOp> upload(Device& device) const override {
    struct State {
      std::unique_ptr<cuda::DeviceModel> model;
      DeviceBuffer<float> inv, k_token, v_token;
      DeviceBuffer<int> pos;
      DeviceArray prompt;  // the prompt's rank rows, k then v, as prefill stages them
      std::unique_ptr<cuda::LowRankKv> kv;
    };
    std::vector<float> inv(spec_.config.head_dim / 2);
    rope_inv_freq(spec_.config, inv.data());
    const int64_t ld = cuda::round_up8(rank_k_) + cuda::round_up8(rank_v_);
    std::vector<float> staged((len_ - 1) * ld, 0.0f);
    const std::vector<float> k_rows = rank_rows(rank_k_, 121), v_rows = rank_rows(rank_v_, 123);
    for (int64_t r = 0; r + 1 < len_; ++r) {
      std::copy_n(&k_rows[r * rank_k_], rank_k_, &staged[r * ld]);
      std::copy_n(&v_rows[r * rank_v_], rank_v_, &staged[r * ld + cuda::round_up8(rank_k_)]);
    }
    State s{std::make_unique<cuda::DeviceModel>(spec_, kBf16), to_device(inv),
            to_device(rank_token(rank_k_, 121)), to_device(rank_token(rank_v_, 123)),
            to_device(std::vector<int>{len_ - 1}), DeviceArray(staged, kBf16), nullptr};
    s.kv = std::make_unique<cuda::LowRankKv>(*s.model, context_, s.inv.data(), device.stream());
    if (len_ > 1) {
      auto* p = static_cast<__nv_bfloat16*>(s.prompt.data());
      s.kv->store_rows(0, p, p + cuda::round_up8(rank_k_), ld, 0, len_ - 1);
    }
    // The decode step's per-layer work; the LowRankKv enqueues on the Device's stream.
    return device_op(
        std::move(s),
        [len = len_](State& st, cudaStream_t) {
          st.kv->store_token(0, st.k_token.data(), st.v_token.data(), st.pos.data());
          st.kv->rebuild(0, len);
        },
        [n = len_ * kv_dim_](State& st, cudaStream_t) {
          const cuda::KvCacheLayer dense = st.kv->scratch();
          return Outputs{download_bf16(dense.k, n), download_bf16(dense.v, n)};
        });
  }

  // The least a rebuild moves: the rank rows and second factors read, dense bf16 K and V written.
  Cost cost() const override {
    const double ranks = double(rank_k_ + rank_v_);
    return {2.0 * (len_ * ranks + kv_dim_ * ranks + 2.0 * len_ * kv_dim_), 2.0 * len_ * kv_dim_ * ranks};
  }

 private:
  // Rows of O(1) values, sums of `rank` terms: each side's fp32 error walks
  // like 2^-24 sqrt(rank); the bound is 32x that (elements number millions),
  // plus RoPE's sin/cos ulps, then one bf16 step.
  static Tolerance tolerance(int64_t rank) {
    return elementwise(kBf16Step, 0x1p-19 * std::sqrt(double(rank)) + 0x1p-19,
                       "fp32 sums of rank terms in other orders, sin/cos ulps, then bf16");
  }
  static int64_t rank(const SyntheticSpec& s, SyntheticWeight w) {
    return s.rank(0, w, s.config.kv_dim(), s.config.hidden);
  }
  // The prompt's rank rows [len - 1, rank], and the token's [rank] (seed + 1).
  std::vector<float> rank_rows(int64_t rank, uint64_t seed) const { return random_values((len_ - 1) * rank, seed); }
  std::vector<float> rank_token(int64_t rank, uint64_t seed) const { return random_values(rank, seed + 1); }
  // The context's rank rows as the cache holds them (bf16), times `second`ᵀ.
  std::vector<float> rebuilt(const Linear& l, int64_t rank, uint64_t seed) const {
    std::vector<float> rows = rank_rows(rank, seed);
    const std::vector<float> token = rank_token(rank, seed);
    rows.insert(rows.end(), token.begin(), token.end());
    rows = as_stored(rows, kBf16);
    std::vector<float> out(len_ * kv_dim_, 0.0f);
    cpu::matmul_nt(rows.data(), rank, len_, l.second, out.data(), kv_dim_, 0.0f);
    return out;
  }
  SyntheticSpec spec_;
  int context_, len_;
  int64_t kv_dim_, rank_k_, rank_v_;
};

}  // namespace

void add_lowrank_kv_cases(Table& t) {
  // GQA with odd equal ranks (42); MHA of head_dim 128 with unequal ranks;
  // one position, a whole context, part of one, and a context long enough
  // for the GEMM's algorithm choice by timing (1024 rows).
  const SyntheticSpec gqa = one_layer(4, 2, 64, 0.5, 0, 1100), mha = one_layer(2, 2, 128, 0.3, 0.4, 1100);
  t.push_back(std::make_unique<LowRankRebuild>(gqa, 37, 37, ""));
  t.push_back(std::make_unique<LowRankRebuild>(gqa, 300, 1, ""));
  t.push_back(std::make_unique<LowRankRebuild>(gqa, 300, 129, ""));
  t.push_back(std::make_unique<LowRankRebuild>(mha, 64, 5, ""));
  t.push_back(std::make_unique<LowRankRebuild>(mha, 1100, 1100, ""));
  // LLaMA-7B keep 0.5 (ranks 1024): a decode step rebuilds the whole context.
  for (int context : {1024, 4096})
    t.push_back(std::make_unique<LowRankRebuild>(one_layer(32, 32, 128, 0.5, 0, context), context, context,
                                                 "llama-7b keep0.5"));
}

}  // namespace fsvd::optable
