// Cases of decode_attention: one token's RoPE, its k and v stored at the
// cursor, split-KV attention over the cache, for GQA ratios 1 to 16, head
// sizes 64 and 128, bf16 and fp32 caches and lengths from one position to
// many KV slices (every length up to 300 for one shape). The cache rows from
// the token's own on are NaN: the op must take the token's k and v from its
// inputs and never read past it. The reference: cpu::rope, then
// cpu::attention over the cache as the device holds it.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/decode_attention.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using cuda::HeadShape;
using std::to_string;

class DecodeAttention final : public OpCase {
 public:
  DecodeAttention(ElementType type, HeadShape s, int max_ctx, int len, bool pdl, std::string model)
      : OpCase("decode_attention",
               type_name(type) + " " + describe(s) + " ctx=" + to_string(max_ctx) + " len=" + to_string(len) +
                   (pdl ? " pdl" : "") + (model.empty() ? "" : " " + model),
               !model.empty()),
        type_(type), s_(s), max_ctx_(max_ctx), pos_(len - 1), pdl_(pdl),
        q_dim_(int64_t{s.n_heads} * s.head_dim), kv_dim_(int64_t{s.n_kv_heads} * s.head_dim) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> inv = rope_frequencies(s_.head_dim, false);
    std::vector<float> q = token(93, q_dim_, 2.0f), k = token(94, kv_dim_);
    cpu::rope(q.data(), 1, q_dim_, s_.n_heads, s_.head_dim, pos_, inv.data());
    cpu::rope(k.data(), 1, kv_dim_, s_.n_kv_heads, s_.head_dim, pos_, inv.data());
    const std::vector<float> k_row = as_stored(k, type_), v_row = as_stored(token(95, kv_dim_), type_);
    std::vector<float> kc = cache(91), vc = cache(92);
    std::copy(k_row.begin(), k_row.end(), kc.begin() + pos_ * kv_dim_);
    std::copy(v_row.begin(), v_row.end(), vc.begin() + pos_ * kv_dim_);
    std::vector<float> out(q_dim_);
    cpu::attention(q.data(), q_dim_, {kc.data(), vc.data(), kv_dim_}, 1, pos_, {s_.n_heads, s_.n_kv_heads, s_.head_dim},
                   out.data());
    // fp32: exp2 of log2-scaled scores against exp and the sums' orders; the
    // CPU's serial fp32 sums alone are ~3e-6 from double at 4097 positions. An
    // output averages value rows, ~sqrt(len) smaller than they are, so a lost
    // or doubled position shows far above either bound.
    return {{"out", out,
             type_ == ElementType::F32 ? relative_l2(1e-5, "fp32 softmax and sums in other orders")
                                       : relative_l2(1e-3, "the serving path's bound over a bf16 cache")},
            {"k row", k_row, rope_tolerance(type_)},
            {"v row", v_row, exact("v stored as it came, rounded for bf16")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray k_cache, v_cache;
      DeviceBuffer<float> q, k, v, inv, workspace, out;
      DeviceBuffer<int> pos;
    };
    State state{DeviceArray(cache(91), type_), DeviceArray(cache(92), type_), to_device(token(93, q_dim_, 2.0f)),
                to_device(token(94, kv_dim_)), to_device(token(95, kv_dim_)),
                to_device(rope_frequencies(s_.head_dim, false)),
                DeviceBuffer<float>(cuda::plan_decode_attention(s_, max_ctx_).workspace_floats),
                poisoned<float>(q_dim_), to_device(std::vector<int>{pos_})};
    state.workspace.zero();
    // Rows from the token's on are NaN: written by the op, or never read.
    const size_t row = kv_dim_ * element_bytes(type_);
    for (const DeviceArray* c : {&state.k_cache, &state.v_cache})
      FSVD_CUDA_CHECK(cudaMemset(static_cast<uint8_t*>(c->data()) + pos_ * row, 0xff, (max_ctx_ - pos_) * row));
    return device_op(
        std::move(state),
        [s = s_, max_ctx = max_ctx_, pdl = pdl_](State& st, cudaStream_t stream) {
          cuda::decode_attention(st.q.data(), st.k.data(), st.v.data(), st.inv.data(),
                                 {st.k_cache.data(), st.v_cache.data(), max_ctx, st.k_cache.type()}, st.pos.data(), s,
                                 st.workspace.data(), st.workspace.size(), st.out.data(), stream, pdl);
        },
        [first = pos_ * kv_dim_, n = kv_dim_](State& st, cudaStream_t) {
          return Outputs{st.out.download(), st.k_cache.download(first, n), st.v_cache.download(first, n)};
        });
  }

  Cost cost() const override {
    const double len = pos_ + 1, e = element_bytes(type_);
    return {2 * len * kv_dim_ * e + q_dim_ * 8.0 + kv_dim_ * 8.0, 4.0 * len * q_dim_};
  }

 private:
  std::vector<float> cache(uint64_t seed) const { return as_stored(random_values(max_ctx_ * kv_dim_, seed), type_); }
  static std::vector<float> token(uint64_t seed, int64_t n, float stddev = 1.0f) {
    return random_values(n, seed, stddev);
  }
  ElementType type_;
  HeadShape s_;
  int max_ctx_, pos_;
  bool pdl_;
  int64_t q_dim_, kv_dim_;
};

}  // namespace

void add_decode_attention_cases(Table& t) {
  // GQA ratios 1, 3, 4, 8 and 16 (two CTAs per kv head), both head sizes;
  // PDL on for odd lengths.
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}, {16, 1, 128}};
  for (ElementType type : {ElementType::BF16, ElementType::F32})
    for (const HeadShape& s : shapes)
      for (int len : {4097, 1000, 257, 256, 255, 37, 2, 1})
        t.push_back(std::make_unique<DecodeAttention>(type, s, 4097, len, len % 2 == 1, ""));
  // Every slice boundary of one plan (bf16 and fp32 caches share the partition).
  for (int len = 1; len <= 300; ++len)
    t.push_back(std::make_unique<DecodeAttention>(ElementType::F32, HeadShape{12, 4, 64}, 300, len, false, ""));
  // LLaMA-7B (MHA) and Llama-3-8B (GQA 4) decode steps, as the executor launches them.
  for (int len : {512, 4096})
    t.push_back(
        std::make_unique<DecodeAttention>(ElementType::BF16, HeadShape{32, 32, 128}, 4096, len, true, "llama-7b"));
  for (int len : {1024, 8192})
    t.push_back(
        std::make_unique<DecodeAttention>(ElementType::BF16, HeadShape{32, 8, 128}, 8192, len, true, "llama-3-8b"));
}

}  // namespace fsvd::optable
