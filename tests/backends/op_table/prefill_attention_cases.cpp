// Cases of prefill_attention: causal attention of a prompt chunk over the
// bf16 cache (fp8 for some), for GQA groups 1 to 8, both head sizes, odd lengths, chunks
// starting at 0 and past it, and enough queries for 128-query tiles; the
// cache dense (the pool's blocks in order) or paged (the sequence's blocks
// shuffled over a pool, blocks of 16 and 64). Pool rows that hold no
// position of the chunk's sequence are NaN: never read. The reference:
// cpu::attention on the same bf16 (fp8) values.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cuda/flash_attention.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using cuda::HeadShape;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr ElementType kBf16 = ElementType::BF16;

// Causal attention of n bf16 query rows at positions [pos, pos + n) over
// cache rows [0, pos + n) (the 9 or more rows past them, to the end of the
// last block, NaN).
class PrefillAttention final : public OpCase {
 public:
  // block_size 0: dense; else the sequence's positions in shuffled blocks of
  // that size. cache: the cache's element, bf16 or fp8.
  PrefillAttention(HeadShape s, int pos, int n, std::string model, int block_size = 0, ElementType cache = kBf16)
      : OpCase("prefill_attention",
               describe(s) + (cache == kBf16 ? "" : " " + type_name(cache)) + " pos=" + std::to_string(pos) +
                   " n=" + std::to_string(n) + (block_size ? " paged/" + std::to_string(block_size) : "") +
                   (model.empty() ? "" : " " + model),
               !model.empty()),
        cache_type_(cache), s_(s), pos_(pos), n_(n), q_dim_(int64_t{s.n_heads} * s.head_dim), kv_dim_(int64_t{s.n_kv_heads} * s.head_dim),
        blocks_((pos + n + 9 + cuda::kDefaultBlockSize - 1) / cuda::kDefaultBlockSize), block_size_(block_size) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> q = as_stored(queries(), kBf16), k = as_stored(cache(112), cache_type_),
                             v = as_stored(cache(113), cache_type_);
    std::vector<float> out(n_ * q_dim_);
    cpu::attention(q.data(), q_dim_, {k.data(), v.data(), kv_dim_}, n_, pos_, {s_.n_heads, s_.n_kv_heads, s_.head_dim},
                   out.data());
    // The kernel sees the twin's bf16 (fp8, widened exactly) values; it rounds the probabilities to
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
      DeviceBuffer<int32_t> table;
    };
    if (block_size_ == 0)
      return device_op(
          State{DeviceArray(queries(), kBf16), DeviceArray(cache(112), cache_type_),
                DeviceArray(cache(113), cache_type_), DeviceArray(n_ * q_dim_, kBf16), {}},
          [s = s_, pos = pos_, n = n_, blocks = blocks_](State& st, cudaStream_t stream) {
            cuda::prefill_attention(st.q.bf16(),
                                    {st.k.data(), st.v.data(), cuda::kDefaultBlockSize, blocks, st.k.type()}, nullptr,
                                    pos, n, s, st.out.bf16(), stream);
          },
          [](State& st, cudaStream_t) { return Outputs{st.out.download()}; });
    const int len = pos_ + n_;
    const PagedLayout layout(std::span(&len, 1), block_size_, len, true, 3);
    // The sequence's rows placed at their pool rows; every other row NaN.
    auto pool = [&](uint64_t seed) {
      const std::vector<float> dense = cache(seed);
      std::vector<float> rows(layout.pool_rows() * kv_dim_, kNaN);
      for (int t = 0; t < len; ++t)
        std::copy_n(dense.begin() + int64_t{t} * kv_dim_, kv_dim_, rows.begin() + layout.row(0, t) * kv_dim_);
      return rows;
    };
    return device_op(
        State{DeviceArray(queries(), kBf16), DeviceArray(pool(112), cache_type_), DeviceArray(pool(113), cache_type_),
              DeviceArray(n_ * q_dim_, kBf16), to_device(std::span<const int32_t>(layout.tables))},
        [s = s_, pos = pos_, n = n_, bs = block_size_, nb = layout.num_blocks](State& st, cudaStream_t stream) {
          cuda::prefill_attention(st.q.bf16(), {st.k.data(), st.v.data(), bs, nb, st.k.type()}, st.table.data(), pos,
                                  n, s, st.out.bf16(), stream);
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
    c.resize(int64_t{blocks_} * cuda::kDefaultBlockSize * kv_dim_, kNaN);
    return c;
  }
  ElementType cache_type_;
  HeadShape s_;
  int pos_, n_;
  int64_t q_dim_, kv_dim_;
  int blocks_;      // of the dense pool, in order
  int block_size_;  // 0: dense
};

}  // namespace

void add_prefill_attention_cases(Table& t) {
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
  // A LLaMA-7B prefill chunk of 2048 tokens, first and second; Llama-3-8B's GQA.
  const HeadShape llama7b{32, 32, 128};
  t.push_back(std::make_unique<PrefillAttention>(llama7b, 0, 2048, "llama-7b"));
  t.push_back(std::make_unique<PrefillAttention>(llama7b, 2048, 2048, "llama-7b second chunk"));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{32, 8, 128}, 0, 2048, "llama-3-8b"));
  // Paged: a chunk at the start and a later one of a sequence whose blocks are scattered over the pool.
  for (int block : {16, 64})
    for (const HeadShape& s : {HeadShape{8, 2, 128}, HeadShape{12, 3, 64}, HeadShape{32, 32, 128}})
      for (auto [pos, n] : {std::pair{0, 130}, std::pair{100, 57}, std::pair{333, 300}})
        t.push_back(std::make_unique<PrefillAttention>(s, pos, n, "", block));
  t.push_back(std::make_unique<PrefillAttention>(llama7b, 2048, 2048, "llama-7b second chunk", 16));
  // An fp8 cache: both head sizes (64- and 128-query tiles), dense and paged, tails of partial tiles.
  for (const HeadShape& s : {HeadShape{8, 2, 128}, HeadShape{12, 3, 64}, HeadShape{32, 32, 128}})
    for (int block : {0, 16})
      for (auto [pos, n] : {std::pair{0, 1}, std::pair{0, 130}, std::pair{100, 57}, std::pair{333, 300}})
        t.push_back(std::make_unique<PrefillAttention>(s, pos, n, "", block, ElementType::F8E4M3));
  t.push_back(std::make_unique<PrefillAttention>(HeadShape{32, 8, 128}, 0, 1300, "", 0, ElementType::F8E4M3));
  t.push_back(
      std::make_unique<PrefillAttention>(llama7b, 2048, 2048, "llama-7b second chunk", 16, ElementType::F8E4M3));
}

}  // namespace fsvd::optable
