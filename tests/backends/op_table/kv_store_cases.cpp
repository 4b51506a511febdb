// Cases of the KV-cache row stores: store_row_bf16 (the decode step's append
// of a rank-space row, at a position in device memory; nothing outside the
// rows) and rope_store_kv_rows (q, k, v as column slices of one packed row,
// padded or not; without v, whose rows prefill's GEMM writes; without q, as
// the low-rank KV rebuild calls it) against cpu::rope. Cache rows outside
// the chunk are NaN: never written.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/kv_store.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using cuda::HeadShape;
using std::to_string;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr ElementType kBf16 = ElementType::BF16;

// The decode step's append of x (rounded to bf16) as row pos of max_rows
// rows of stride ld; nothing when pos is outside them.
class StoreRowBf16 final : public OpCase {
 public:
  StoreRowBf16(int64_t cols, int64_t ld, int max_rows, int pos, bool timed)
      : OpCase("store_row_bf16",
               "cols=" + to_string(cols) + " ld=" + to_string(ld) + " rows=" + to_string(max_rows) +
                   " pos=" + to_string(pos),
               timed),
        cols_(cols), ld_(ld), max_rows_(max_rows), pos_(pos) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> x = row();
    std::vector<float> rows(max_rows_ * ld_, kNaN);
    if (pos_ >= 0 && pos_ < max_rows_)
      for (int64_t c = 0; c < cols_; ++c) rows[pos_ * ld_ + c] = round_bf16(x[c]);
    return {{"rows", rows, exact("round to nearest even, written only in the row at the position")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> x;
      DeviceBuffer<int> pos;
      DeviceArray rows;
    };
    return device_op(
        State{to_device(row()), to_device(std::vector<int>{pos_}), DeviceArray(max_rows_ * ld_, ElementType::BF16)},
        [cols = cols_, ld = ld_, max_rows = max_rows_](State& s, cudaStream_t stream) {
          cuda::store_row_bf16(s.x.data(), cols, s.pos.data(), max_rows, s.rows.bf16(), ld,
                               stream);
        },
        [](State& s, cudaStream_t) { return Outputs{s.rows.download()}; });
  }

  Cost cost() const override { return {double(cols_ * 6 + 4)}; }

 private:
  std::vector<float> row() const { return random_values(cols_, 45); }
  int64_t cols_, ld_;
  int max_rows_, pos_;
};

// n rows at positions [pos, pos + n) of a packed [q | k | v | pad] buffer:
// k RoPE'd into the cache rows, v copied there, q RoPE'd into bf16 rows.
class RopeStoreKvRows final : public OpCase {
 public:
  RopeStoreKvRows(HeadShape s, int pos, int n, int pad, bool with_q, bool with_v, std::string model)
      : OpCase("rope_store_kv_rows",
               describe(s) + " pos=" + to_string(pos) + " n=" + to_string(n) + " pad=" + to_string(pad) +
                   (with_q ? "" : " no-q") + (with_v ? "" : " no-v") +
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
    std::vector<Expected> out = {
        {"k cache", as_stored(k, kBf16), rope_tolerance(kBf16)},
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
          cuda::rope_store_kv_rows(with_q ? rows : nullptr, ld, rows + q_dim, ld,
                                   with_v ? rows + q_dim + kv_dim : nullptr, ld, st.inv.data(), pos, n, s,
                                   {st.k.data(), st.v.data(), max_ctx, kBf16},
                                   with_q ? st.q.bf16() : nullptr, stream);
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

}  // namespace

void add_kv_store_cases(Table& t) {
  for (int pos : {3, -1, 5}) t.push_back(std::make_unique<StoreRowBf16>(37, 40, 5, pos, false));
  t.push_back(std::make_unique<StoreRowBf16>(1, 8, 2, 1, false));
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
  // LLaMA-7B: the low-rank KV cache's append of a rank-1024 row to 4096
  // positions; a 2048-token prefill chunk's rows (dense q|k|v; keep 0.5's v
  // from its GEMM); the low-rank KV rebuild's k and v of 4096 rows.
  const HeadShape llama7b{32, 32, 128};
  t.push_back(std::make_unique<StoreRowBf16>(1024, 1024, 4096, 1000, true));
  t.push_back(std::make_unique<RopeStoreKvRows>(llama7b, 0, 2048, 0, true, true, "llama-7b dense"));
  t.push_back(std::make_unique<RopeStoreKvRows>(llama7b, 0, 2048, 0, true, false, "llama-7b keep0.5"));
  t.push_back(std::make_unique<RopeStoreKvRows>(llama7b, 0, 4096, 0, false, true, "llama-7b rebuild"));
}

}  // namespace fsvd::optable
