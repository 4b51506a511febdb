// Cases of the KV-cache row stores: store_row_bf16 (the decode step's append
// of a rank-space row, at a position in device memory; nothing outside the
// rows) and rope_store_kv_rows (q, k, v as column slices of one packed row,
// padded or not; without v, whose rows prefill's GEMM writes; without q, as
// the low-rank KV rebuild calls it) against cpu::rope: a prompt chunk over
// blocks in order (the executor's layout) or shuffled, a mixed batch's rows
// of several sequences with a padding row, a decode step's rows without a
// sequence array; blocks of 16, 64 and 256, every head size, bf16 and fp32
// pools. Pool rows no row writes are NaN: never written.
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

// n rows of a packed [q | k | v | pad] buffer, row i at position pos of
// sequence seq (a padding row where pos < 0), through the sequences' block
// tables: k RoPE'd and v copied into the pool at the row's slot, q RoPE'd
// into bf16 rows (a padding row's zeros).
class RopeStoreKvRows final : public OpCase {
 public:
  struct Row {
    int seq, pos;
  };
  // `label` names the rows; the case's layout: blocks of block_size, shuffled or in order.
  RopeStoreKvRows(HeadShape s, ElementType type, std::vector<Row> rows, std::string label, int block_size,
                  bool shuffled, int pad, bool with_q, bool with_v, std::string model)
      : OpCase("rope_store_kv_rows",
               describe(s) + (type == kBf16 ? "" : " " + type_name(type)) + " " + label + " pad=" + to_string(pad) +
                   (block_size == cuda::kDefaultBlockSize ? "" : " bs=" + to_string(block_size)) +
                   (shuffled ? " shuffled" : "") + (with_q ? "" : " no-q") + (with_v ? "" : " no-v") +
                   (model.empty() ? "" : " " + model),
               !model.empty()),
        s_(s), type_(type), rows_(std::move(rows)), n_(static_cast<int>(rows_.size())), with_q_(with_q),
        with_v_(with_v), llama3_(rows_[0].pos % 2 == 1), q_dim_(int64_t{s.n_heads} * s.head_dim),
        kv_dim_(int64_t{s.n_kv_heads} * s.head_dim), ld_(q_dim_ + 2 * kv_dim_ + pad),
        layout_(sequence_lens(rows_), block_size, max_len(rows_) + 5, shuffled) {
    for (const Row& r : rows_) {
      pos_.push_back(r.pos);
      seq_.push_back(r.seq);
      one_row_a_sequence_ = one_row_a_sequence_ && r.seq == static_cast<int>(seq_.size()) - 1;
    }
  }

  std::vector<Expected> reference() const override {
    const std::vector<float> inv = rope_frequencies(s_.head_dim, llama3_);
    std::vector<float> rows = packed();
    std::vector<float> k(layout_.pool_rows() * kv_dim_, kNaN), v = k, q(n_ * q_dim_, 0.0f);
    for (int i = 0; i < n_; ++i) {
      if (pos_[i] < 0) continue;  // padding: zeros in q, no slot
      float* row = &rows[i * ld_];
      cpu::rope(row, 1, ld_, s_.n_heads, s_.head_dim, pos_[i], inv.data());
      cpu::rope(row + q_dim_, 1, ld_, s_.n_kv_heads, s_.head_dim, pos_[i], inv.data());
      std::copy_n(row, q_dim_, &q[i * q_dim_]);
      const int64_t slot = layout_.row(seq_[i], pos_[i]) * kv_dim_;
      std::copy_n(row + q_dim_, kv_dim_, &k[slot]);
      if (with_v_) std::copy_n(row + q_dim_ + kv_dim_, kv_dim_, &v[slot]);
    }
    std::vector<Expected> out = {
        {"k pool", as_stored(k, type_), rope_tolerance(type_)},
        {"v pool", as_stored(v, type_), exact("v rows as stored, nothing else written")}};
    if (with_q_) out.push_back({"q", as_stored(q, kBf16), rope_tolerance(kBf16)});
    return out;
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> rows, inv;
      DeviceBuffer<int> pos, seq;
      DeviceBuffer<int32_t> tables;
      DeviceArray k, v, q;
    };
    // Rows of distinct sequences in table order also run without seq (row i reads table row i).
    State state{to_device(packed()),
                to_device(rope_frequencies(s_.head_dim, llama3_)),
                to_device(pos_),
                one_row_a_sequence_ ? DeviceBuffer<int>() : to_device(seq_),
                to_device(layout_.tables),
                DeviceArray(layout_.pool_rows() * kv_dim_, type_),
                DeviceArray(layout_.pool_rows() * kv_dim_, type_),
                DeviceArray(with_q_ ? n_ * q_dim_ : 0, kBf16)};
    return device_op(
        std::move(state),
        [s = s_, n = n_, with_q = with_q_, with_v = with_v_, q_dim = q_dim_, kv_dim = kv_dim_, ld = ld_,
         type = type_, block_size = layout_.block_size, num_blocks = layout_.num_blocks,
         max_blocks = layout_.max_blocks](State& st, cudaStream_t stream) {
          const float* rows = st.rows.data();
          cuda::rope_store_kv_rows({with_q ? rows : nullptr, rows + q_dim, with_v ? rows + q_dim + kv_dim : nullptr,
                                    ld, ld, ld},
                                   st.inv.data(), {st.pos.data(), st.seq.data(), st.tables.data(), max_blocks}, n, s,
                                   {st.k.data(), st.v.data(), block_size, num_blocks, type},
                                   with_q ? st.q.bf16() : nullptr, stream);
        },
        [with_q = with_q_](State& st, cudaStream_t) {
          Outputs out{st.k.download(), st.v.download()};
          if (with_q) out.push_back(st.q.download());
          return out;
        });
  }

  Cost cost() const override {
    const double e = element_bytes(type_);
    const double q = with_q_ ? q_dim_ * 6.0 : 0, v = with_v_ ? kv_dim_ * (4 + e) : 0;
    return {n_ * (q + kv_dim_ * (4 + e) + v)};
  }

 private:
  static std::vector<int> sequence_lens(const std::vector<Row>& rows) {
    std::vector<int> lens;
    for (const Row& r : rows) {
      if (r.seq >= static_cast<int>(lens.size())) lens.resize(r.seq + 1, 0);
      lens[r.seq] = std::max(lens[r.seq], r.pos + 1);
    }
    return lens;
  }
  static int max_len(const std::vector<Row>& rows) {
    int m = 0;
    for (const Row& r : rows) m = std::max(m, r.pos + 1);
    return m;
  }
  std::vector<float> packed() const { return random_values(n_ * ld_, 101); }
  HeadShape s_;
  ElementType type_;
  std::vector<Row> rows_;
  int n_;
  bool with_q_, with_v_, llama3_;
  int64_t q_dim_, kv_dim_, ld_;
  PagedLayout layout_;
  std::vector<int> pos_, seq_;
  bool one_row_a_sequence_ = true;
};

// n rows of sequence `seq` at positions [pos, pos + n).
std::vector<RopeStoreKvRows::Row> chunk(int pos, int n, int seq = 0) {
  std::vector<RopeStoreKvRows::Row> rows(n);
  for (int i = 0; i < n; ++i) rows[i] = {seq, pos + i};
  return rows;
}

}  // namespace

void add_kv_store_cases(Table& t) {
  for (int pos : {3, -1, 5}) t.push_back(std::make_unique<StoreRowBf16>(37, 40, 5, pos, false));
  t.push_back(std::make_unique<StoreRowBf16>(1, 8, 2, 1, false));
  using Row = RopeStoreKvRows::Row;
  auto add = [&](HeadShape s, ElementType type, std::vector<Row> rows, std::string label, int block_size,
                 bool shuffled, int pad, bool with_q, bool with_v, std::string model = "") {
    t.push_back(std::make_unique<RopeStoreKvRows>(s, type, std::move(rows), std::move(label), block_size, shuffled,
                                                  pad, with_q, with_v, std::move(model)));
  };
  // A mixed batch's rows: a chunk of sequence 1, single tokens of others, a
  // padding row, three rows of a sequence's start.
  std::vector<Row> mixed = chunk(100, 40, 1);
  for (Row r : {Row{0, 5}, Row{2, -1}, Row{2, 1000}, Row{3, 0}, Row{3, 1}, Row{3, 2}}) mixed.push_back(r);
  // A decode step's rows, one a sequence in table order (run without seq), one padding.
  const std::vector<Row> decode = {{0, 77}, {1, 3}, {2, -1}, {3, 700}, {4, 0}};
  // (pos, n, row padding): a padding of 4 keeps fp32 rows 16-byte aligned
  // (the 4-pair path), 3 does not (one pair a thread). Odd first positions
  // use Llama 3.1's scaled frequencies.
  struct Chunk {
    int pos, n, pad;
  };
  for (const HeadShape& s : {HeadShape{8, 8, 64}, HeadShape{9, 3, 128}, HeadShape{32, 8, 128}, HeadShape{32, 4, 64},
                             HeadShape{6, 2, 80}, HeadShape{12, 4, 96}, HeadShape{4, 2, 256}}) {
    constexpr int kBs = cuda::kDefaultBlockSize;
    for (const Chunk& c : {Chunk{0, 1, 4}, Chunk{0, 7, 3}, Chunk{37, 63, 4}, Chunk{1000, 130, 3}})
      for (bool with_v : {true, false})
        add(s, kBf16, chunk(c.pos, c.n), "pos=" + to_string(c.pos) + " n=" + to_string(c.n), kBs, false, c.pad,
            true, with_v);
    add(s, kBf16, chunk(37, 63), "pos=37 n=63", kBs, false, 3, false, true);
    for (ElementType type : {kBf16, ElementType::F32, ElementType::F8E4M3}) {
      for (int block_size : {16, 64, 256}) {
        add(s, type, chunk(37, 63), "pos=37 n=63", block_size, true, 4, true, true);
        add(s, type, mixed, "mixed", block_size, true, block_size == 64 ? 3 : 4, true, true);
      }
      add(s, type, decode, "decode", 64, true, 3, true, true);
    }
  }
  // LLaMA-7B: the low-rank KV cache's append of a rank-1024 row to 4096
  // positions; a 2048-token prefill chunk's rows (dense q|k|v; keep 0.5's v
  // from its GEMM); the low-rank KV rebuild's k and v of 4096 rows.
  const HeadShape llama7b{32, 32, 128};
  t.push_back(std::make_unique<StoreRowBf16>(1024, 1024, 4096, 1000, true));
  add(llama7b, kBf16, chunk(0, 2048), "pos=0 n=2048", 16, false, 0, true, true, "llama-7b dense");
  add(llama7b, kBf16, chunk(0, 2048), "pos=0 n=2048", 16, false, 0, true, false, "llama-7b keep0.5");
  add(llama7b, kBf16, chunk(0, 4096), "pos=0 n=4096", 16, false, 0, false, true, "llama-7b rebuild");
}

}  // namespace fsvd::optable
