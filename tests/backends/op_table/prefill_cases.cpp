// Cases of the prefill attention ops: rope_store_kv_rows (q, k, v as column
// slices of one packed row, padded or not; without v, whose rows prefill's
// GEMM writes; without q, as the low-rank KV rebuild calls it) against
// cpu::rope, and prefill_attention against cpu::attention on the same bf16
// values, for GQA groups 1 to 8, both head sizes, odd lengths and chunks
// starting at 0 and past it. Cache rows outside the chunk are NaN: never
// written, never read.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/prefill_attention.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using cuda::HeadShape;
using std::to_string;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr ElementType kBf16 = ElementType::BF16;

std::string describe(const HeadShape& s, int pos, int n) {
  return "heads=" + to_string(s.n_heads) + "/" + to_string(s.n_kv_heads) + " hd=" + to_string(s.head_dim) +
         " pos=" + to_string(pos) + " n=" + to_string(n);
}

__nv_bfloat16* bf16(const DeviceArray& a) { return static_cast<__nv_bfloat16*>(a.data()); }

// n rows at positions [pos, pos + n) of a packed [q | k | v | pad] buffer:
// k RoPE'd into the cache rows, v copied there, q RoPE'd into bf16 rows.
class RopeStoreKvRows final : public OpCase {
 public:
  RopeStoreKvRows(HeadShape s, int pos, int n, int pad, bool with_q, bool with_v, std::string model)
      : OpCase("rope_store_kv_rows",
               describe(s, pos, n) + " pad=" + to_string(pad) + (with_q ? "" : " no-q") + (with_v ? "" : " no-v") +
                   (model.empty() ? "" : " " + model),
               !model.empty()),
        s_(s), pos_(pos), n_(n), with_q_(with_q), with_v_(with_v), llama3_(pos % 2 == 1),
        q_dim_(int64_t{s.n_heads} * s.head_dim), kv_dim_(int64_t{s.n_kv_heads} * s.head_dim),
        ld_(q_dim_ + 2 * kv_dim_ + pad), max_ctx_(pos + n + 5) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> inv = rope_frequencies(s_.head_dim, llama3_);
    std::vector<float> rows = packed();
    cpu::rope(rows.data(), n_, ld_, s_.n_heads, s_.head_dim, pos_, inv.data());
    cpu::rope(rows.data() + q_dim_, n_, ld_, s_.n_kv_heads, s_.head_dim, pos_, inv.data());
    std::vector<float> k(max_ctx_ * kv_dim_, kNaN), v = k, q(n_ * q_dim_);
    for (int64_t i = 0; i < n_; ++i) {
      const float* row = &rows[i * ld_];
      std::copy_n(row, q_dim_, &q[i * q_dim_]);
      std::copy_n(row + q_dim_, kv_dim_, &k[(pos_ + i) * kv_dim_]);
      if (with_v_) std::copy_n(row + q_dim_ + kv_dim_, kv_dim_, &v[(pos_ + i) * kv_dim_]);
    }
    std::vector<Expected> out = {{"k cache", as_stored(k, kBf16), rope_tolerance(kBf16)},
                                 {"v cache", as_stored(v, kBf16), exact("v rows rounded to bf16, nothing else written")}};
    if (with_q_) out.push_back({"q", as_stored(q, kBf16), rope_tolerance(kBf16)});
    return out;
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> rows, inv;
      DeviceArray k, v, q;
    };
    return device_op(
        State{to_device(packed()), to_device(rope_frequencies(s_.head_dim, llama3_)),
              DeviceArray(max_ctx_ * kv_dim_, kBf16), DeviceArray(max_ctx_ * kv_dim_, kBf16),
              DeviceArray(with_q_ ? n_ * q_dim_ : 0, kBf16)},
        [s = s_, pos = pos_, n = n_, with_q = with_q_, with_v = with_v_, q_dim = q_dim_, kv_dim = kv_dim_,
         ld = ld_, max_ctx = max_ctx_](State& st, cudaStream_t stream) {
          const float* rows = st.rows.data();
          cuda::rope_store_kv_rows(with_q ? rows : nullptr, ld, rows + q_dim, ld, with_v ? rows + q_dim + kv_dim : nullptr,
                                   ld, st.inv.data(), pos, n, s, {st.k.data(), st.v.data(), max_ctx, kBf16},
                                   with_q ? bf16(st.q) : nullptr, stream);
        },
        [with_q = with_q_](State& st, cudaStream_t) {
          Outputs out{st.k.download(), st.v.download()};
          if (with_q) out.push_back(st.q.download());
          return out;
        });
  }

  Cost cost() const override {
    const double q = with_q_ ? q_dim_ * 6.0 : 0, v = with_v_ ? kv_dim_ * 6.0 : 0;
    return {n_ * (q + kv_dim_ * 6.0 + v)};
  }

 private:
  std::vector<float> packed() const { return random_values(n_ * ld_, 101); }
  HeadShape s_;
  int pos_, n_;
  bool with_q_, with_v_, llama3_;
  int64_t q_dim_, kv_dim_, ld_;
  int max_ctx_;
};

// Causal attention of n bf16 query rows at positions [pos, pos + n) over
// cache rows [0, pos + n) (the 9 rows past them NaN).
class PrefillAttention final : public OpCase {
 public:
  PrefillAttention(HeadShape s, int pos, int n, std::string model)
      : OpCase("prefill_attention", describe(s, pos, n) + (model.empty() ? "" : " " + model), !model.empty()),
        s_(s), pos_(pos), n_(n), q_dim_(int64_t{s.n_heads} * s.head_dim), kv_dim_(int64_t{s.n_kv_heads} * s.head_dim),
        max_ctx_(pos + n + 9) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> q = as_stored(queries(), kBf16), k = as_stored(cache(112), kBf16),
                             v = as_stored(cache(113), kBf16);
    std::vector<float> out(n_ * q_dim_);
    cpu::attention(q.data(), q_dim_, k.data(), v.data(), n_, pos_, {s_.n_heads, s_.n_kv_heads, s_.head_dim},
                   out.data());
    // The kernel sees the twin's bf16 values; it rounds the probabilities to
    // bf16 for the P·V product and the output to bf16, each at most 2^-9
    // relative (RMS 2^-9/sqrt(3) ~ 1.1e-3), ~1.6e-3 together: the bound is
    // twice that. A row is held to 1e-2: a key lost or added at the diagonal
    // moves a row of L keys by ~1/L, far above it for pos 0's short rows.
    Tolerance tol = relative_l2(4e-3, "bf16 probabilities and output");
    tol.row = q_dim_;
    tol.row_rel = 1e-2;
    return {{"out", out, tol}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray q, k, v, out;
    };
    return device_op(
        State{DeviceArray(queries(), kBf16), DeviceArray(cache(112), kBf16), DeviceArray(cache(113), kBf16),
              DeviceArray(n_ * q_dim_, kBf16)},
        [s = s_, pos = pos_, n = n_, max_ctx = max_ctx_](State& st, cudaStream_t stream) {
          cuda::prefill_attention(bf16(st.q), {st.k.data(), st.v.data(), max_ctx, kBf16}, pos, n, s, bf16(st.out),
                                  stream);
        },
        [](State& st, cudaStream_t) { return Outputs{st.out.download()}; });
  }

  Cost cost() const override {
    const double keys = double(pos_) * n_ + double(n_) * (n_ + 1) / 2;  // query rows' causal spans
    return {(pos_ + n_) * kv_dim_ * 4.0 + n_ * q_dim_ * 4.0, 4.0 * keys * q_dim_};
  }

 private:
  std::vector<float> queries() const { return random_values(n_ * q_dim_, 111, 2.0f); }
  // The cache: rows [0, pos + n) random, the rest NaN.
  std::vector<float> cache(uint64_t seed) const {
    std::vector<float> c = random_values((pos_ + n_) * kv_dim_, seed);
    c.resize(max_ctx_ * kv_dim_, kNaN);
    return c;
  }
  HeadShape s_;
  int pos_, n_;
  int64_t q_dim_, kv_dim_;
  int max_ctx_;
};

}  // namespace

void add_prefill_cases(Table& t) {
  // (pos, n, row padding): a padding of 4 keeps fp32 rows 16-byte aligned
  // (the 4-pair path), 3 does not (one pair a thread). Odd positions use
  // Llama 3.1's scaled frequencies.
  struct Chunk {
    int pos, n, pad;
  };
  for (const HeadShape& s : {HeadShape{8, 8, 64}, HeadShape{9, 3, 128}, HeadShape{32, 8, 128}, HeadShape{32, 4, 64}}) {
    for (const Chunk& c : {Chunk{0, 1, 4}, Chunk{0, 7, 3}, Chunk{37, 63, 4}, Chunk{1000, 130, 3}})
      for (bool with_v : {true, false})
        t.push_back(std::make_unique<RopeStoreKvRows>(s, c.pos, c.n, c.pad, true, with_v, ""));
    t.push_back(std::make_unique<RopeStoreKvRows>(s, 37, 63, 3, false, true, ""));
  }
  // GQA groups 1, 3, 4 and 8 with both head sizes; pos 100: a second chunk
  // whose start is on no tile boundary.
  for (const HeadShape& s : {HeadShape{4, 4, 128}, HeadShape{8, 8, 64}, HeadShape{9, 3, 128}, HeadShape{12, 3, 64},
                             HeadShape{32, 8, 128}, HeadShape{32, 4, 64}, HeadShape{16, 2, 128}})
    for (int pos : {0, 100})
      for (int n : {1, 7, 63, 130, 257}) t.push_back(std::make_unique<PrefillAttention>(s, pos, n, ""));
  // Few heads and short prompts run 64-query tiles; 32 heads of 1300 queries
  // (352 tiles of 128) run 128-query tiles on any GPU of up to 176 SMs.
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{8, 2, 128}, 0, 1000, ""));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{4, 1, 64}, 2000, 777, ""));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{6, 3, 128}, 1531, 300, ""));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{32, 8, 128}, 0, 1300, ""));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{32, 4, 64}, 100, 1300, ""));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{32, 32, 128}, 333, 1300, ""));

  // A LLaMA-7B prefill chunk of 2048 tokens (dense q|k|v rows; keep 0.5's v
  // from its GEMM), the low-rank KV rebuild's k and v of 4096 rows, and the
  // attention of a first and a second chunk; Llama-3-8B's GQA.
  const HeadShape llama7b{32, 32, 128};
  t.push_back(std::make_unique<RopeStoreKvRows>(llama7b, 0, 2048, 0, true, true, "llama-7b dense"));
  t.push_back(std::make_unique<RopeStoreKvRows>(llama7b, 0, 2048, 0, true, false, "llama-7b keep0.5"));
  t.push_back(std::make_unique<RopeStoreKvRows>(llama7b, 0, 4096, 0, false, true, "llama-7b rebuild"));
  t.push_back(std::make_unique<PrefillAttention>(llama7b, 0, 2048, "llama-7b"));
  t.push_back(std::make_unique<PrefillAttention>(llama7b, 2048, 2048, "llama-7b second chunk"));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{32, 8, 128}, 0, 2048, "llama-3-8b"));
}

}  // namespace fsvd::optable
