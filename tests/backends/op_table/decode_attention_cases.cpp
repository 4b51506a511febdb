// Cases of decode_attention: a batch of rows, one new token each, over a
// paged pool: RoPE, the token's k and v stored at its slot, split-KV
// attention over the row's own pages. Batch 1 over blocks of 16 in order
// (the executor's layout) for GQA ratios 1 to 16, head sizes 64 and 128,
// bf16, fp8 and fp32 caches and lengths from one position to many KV slices
// (every length up to 300 for one shape); one sequence over shuffled blocks;
// batches of 2 to 33 sequences at lengths from 1 to 1100 with padding rows,
// over block tables of blocks of 16, 64 and 256, for GQA ratios 1 to 8 and
// head sizes 64, 80, 96, 128 and 256; bf16 output rows for some batches. q, k and v are column slices of one
// packed row of odd stride. Pool rows that no sequence has filled (the
// tokens' own slots, rows past each length, blocks nobody owns) are NaN:
// the op must take the tokens' k and v from its inputs and never read
// another row. The reference: cpu::rope, then cpu::attention with a paged
// KvView over the pool as the device holds it.
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
  // Row b at position lens[b] - 1, or a padding row where lens[b] is 0.
  // out_type: the output rows' (bf16: what the GEMM path's o projection reads).
  DecodeAttention(ElementType type, HeadShape s, int max_ctx, std::vector<int> lens, int block_size, bool shuffled,
                  bool pdl, std::string model, ElementType out_type = ElementType::F32)
      : OpCase("decode_attention", params(type, s, max_ctx, lens, block_size, shuffled, pdl, model, out_type),
               !model.empty()),
        type_(type), out_type_(out_type), s_(s), max_ctx_(max_ctx), pdl_(pdl), batch_(static_cast<int>(lens.size())),
        q_dim_(int64_t{s.n_heads} * s.head_dim), kv_dim_(int64_t{s.n_kv_heads} * s.head_dim),
        ld_(q_dim_ + 2 * kv_dim_ + 3), layout_(lens, block_size, max_ctx, shuffled) {
    for (int len : lens) pos_.push_back(len - 1);
  }

  std::vector<Expected> reference() const override {
    const std::vector<float> inv = rope_frequencies(s_.head_dim, false);
    std::vector<float> rows = packed(), kc = pool(91), vc = pool(92), out(batch_ * q_dim_, 0.0f);
    for (int b = 0; b < batch_; ++b) {
      if (pos_[b] < 0) continue;  // padding: zeros out, nothing stored
      float* row = &rows[b * ld_];
      cpu::rope(row, 1, ld_, s_.n_heads, s_.head_dim, pos_[b], inv.data());
      cpu::rope(row + q_dim_, 1, ld_, s_.n_kv_heads, s_.head_dim, pos_[b], inv.data());
      const int64_t slot = layout_.row(b, pos_[b]) * kv_dim_;
      for (int64_t i = 0; i < kv_dim_; ++i) {
        kc[slot + i] = stored(row[q_dim_ + i]);
        vc[slot + i] = stored(row[q_dim_ + kv_dim_ + i]);
      }
      cpu::attention(row, ld_, layout_.view(kc.data(), vc.data(), kv_dim_, b), 1, pos_[b],
                     {s_.n_heads, s_.n_kv_heads, s_.head_dim}, &out[b * q_dim_]);
    }
    // fp32: exp2 of log2-scaled scores against exp and the sums' orders; the
    // CPU's serial fp32 sums alone are ~3e-6 from double at 4097 positions. An
    // output averages value rows, ~sqrt(len) smaller than they are, so a lost
    // or doubled position shows far above either bound. Held per row too: a
    // padding row must be zeros, and one row's error must not hide in a batch.
    // fp8: the inputs are the cache's values on both sides; the token's own
    // k may round one fp8 step apart (rope_tolerance), moving its one score.
    Tolerance tol = type_ == ElementType::F32    ? relative_l2(1e-5, "fp32 softmax and sums in other orders")
                    : type_ == ElementType::BF16 ? relative_l2(1e-3, "the serving path's bound over a bf16 cache")
                                                 : relative_l2(2e-3, "the token's k an fp8 step apart at most");
    if (out_type_ == ElementType::BF16)  // values near a rounding boundary land one bf16 ulp apart
      tol = relative_l2(4e-3, "the serving path's bound, output rows rounded to bf16");
    tol.row = q_dim_;
    tol.row_rel = tol.rel;
    return {{"out", as_stored(out, out_type_), tol},
            {"k pool", kc, rope_tolerance(type_)},
            {"v pool", vc, exact("v stored as it came, rounded for bf16 and fp8; no other row written")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray k_pool, v_pool;
      DeviceBuffer<float> rows, inv, workspace;
      DeviceArray out;
      DeviceBuffer<int> pos;
      DeviceBuffer<int32_t> tables;
    };
    State state{DeviceArray(pool(91), type_),
                DeviceArray(pool(92), type_),
                to_device(packed()),
                to_device(rope_frequencies(s_.head_dim, false)),
                DeviceBuffer<float>(cuda::plan_decode_attention(s_, max_ctx_, batch_).workspace_floats),
                DeviceArray(static_cast<size_t>(batch_ * q_dim_), out_type_),
                to_device(pos_),
                to_device(layout_.tables)};
    state.workspace.zero();
    return device_op(
        std::move(state),
        [s = s_, max_ctx = max_ctx_, batch = batch_, pdl = pdl_, q_dim = q_dim_, kv_dim = kv_dim_, ld = ld_,
         block_size = layout_.block_size, num_blocks = layout_.num_blocks,
         max_blocks = layout_.max_blocks](State& st, cudaStream_t stream) {
          const float* r = st.rows.data();
          cuda::decode_attention({r, r + q_dim, r + q_dim + kv_dim, ld, ld, ld}, st.inv.data(),
                                 {st.k_pool.data(), st.v_pool.data(), block_size, num_blocks, st.k_pool.type()},
                                 {st.pos.data(), nullptr, st.tables.data(), max_blocks}, batch, max_ctx, s,
                                 st.workspace.data(), st.workspace.size(),
                                 st.out.type() == ElementType::BF16 ? cuda::AttentionOut::bf16(st.out.data())
                                                                    : cuda::AttentionOut(static_cast<float*>(st.out.data())),
                                 stream, pdl);
        },
        [](State& st, cudaStream_t) {
          return Outputs{st.out.download(), st.k_pool.download(), st.v_pool.download()};
        });
  }

  Cost cost() const override {
    double bytes = 0, flops = 0;
    const double e = element_bytes(type_);
    for (int p : pos_) {
      if (p < 0) continue;
      bytes += 2 * (p + 1.0) * kv_dim_ * e + q_dim_ * 8.0 + kv_dim_ * 8.0;
      flops += 4.0 * (p + 1) * q_dim_;
    }
    return {bytes, flops};
  }

 private:
  static std::string params(ElementType type, HeadShape s, int max_ctx, const std::vector<int>& lens,
                            int block_size, bool shuffled, bool pdl, const std::string& model,
                            ElementType out_type) {
    std::string p = type_name(type) + " " + describe(s) + " ctx=" + to_string(max_ctx);
    p += lens.size() == 1 ? " len=" + to_string(lens[0])
                          : " batch=" + to_string(lens.size()) +
                                " max_len=" + to_string(*std::max_element(lens.begin(), lens.end()));
    if (block_size != cuda::kDefaultBlockSize) p += " bs=" + to_string(block_size);
    return p + (shuffled ? " shuffled" : "") + (pdl ? " pdl" : "") + (out_type == ElementType::BF16 ? " out bf16" : "") +
           (model.empty() ? "" : " " + model);
  }
  float stored(float x) const { return as_stored(x, type_); }
  // The pool as the step finds it: each sequence's rows before its token.
  std::vector<float> pool(uint64_t seed) const {
    std::vector<int> filled(pos_.size());
    std::transform(pos_.begin(), pos_.end(), filled.begin(), [](int p) { return std::max(p, 0); });
    return layout_.keep_filled(as_stored(random_values(layout_.pool_rows() * kv_dim_, seed), type_), kv_dim_,
                               filled);
  }
  // The rows' q | k | v, one packed row each (q scaled up: sharper softmax).
  std::vector<float> packed() const {
    std::vector<float> rows = random_values(batch_ * ld_, 95);
    const std::vector<float> q = random_values(batch_ * q_dim_, 93, 2.0f);
    for (int b = 0; b < batch_; ++b) std::copy_n(&q[b * q_dim_], q_dim_, &rows[b * ld_]);
    return rows;
  }
  ElementType type_, out_type_;
  HeadShape s_;
  int max_ctx_;
  bool pdl_;
  int batch_;
  int64_t q_dim_, kv_dim_, ld_;
  PagedLayout layout_;
  std::vector<int> pos_;
};

}  // namespace

void add_decode_attention_cases(Table& t) {
  auto add = [&](ElementType type, HeadShape s, int max_ctx, std::vector<int> lens, int block_size, bool shuffled,
                 bool pdl, std::string model = "") {
    t.push_back(std::make_unique<DecodeAttention>(type, s, max_ctx, std::move(lens), block_size, shuffled, pdl,
                                                  std::move(model)));
  };
  constexpr int kBs = cuda::kDefaultBlockSize;
  // Batch 1 in order: GQA ratios 1, 3, 4, 8 and 16 (two CTAs per kv head),
  // both head sizes the executor has always run; PDL on for odd lengths.
  const HeadShape shapes[] = {{8, 8, 64}, {9, 3, 128}, {32, 8, 128}, {32, 4, 64}, {16, 1, 128}};
  for (ElementType type : {ElementType::BF16, ElementType::F32, ElementType::F8E4M3})
    for (const HeadShape& s : shapes)
      for (int len : {4097, 1000, 257, 256, 255, 37, 2, 1}) add(type, s, 4097, {len}, kBs, false, len % 2 == 1);
  // Every slice boundary of one plan (bf16 and fp32 caches share the partition).
  for (int len = 1; len <= 300; ++len) add(ElementType::F32, {12, 4, 64}, 300, {len}, kBs, false, false);

  // Batches: GQA ratios 1 to 8 (5, 6 and 7 round up to 8 heads a CTA), every
  // head size. Row lengths from a list of 1 to 1100 (0: a padding row), a
  // different window of it for each batch size.
  const HeadShape batch_shapes[] = {{8, 8, 64},  {8, 4, 80},  {9, 3, 96},  {16, 4, 128},
                                    {10, 2, 256}, {12, 2, 96}, {14, 2, 80}, {8, 1, 256}};
  const int lens[] = {300, 0,  1,   1100, 64, 33, 700, 17, 0,   257, 2,    513, 65, 900, 48, 129, 0,
                      1000, 5, 96,  31,   32, 600, 200, 7, 0,   450, 16,  1024, 15, 3,   80, 150};
  constexpr int kLens = sizeof(lens) / sizeof(lens[0]);
  for (ElementType type : {ElementType::BF16, ElementType::F32, ElementType::F8E4M3}) {
    for (const HeadShape& s : batch_shapes) {
      add(type, s, 1100, {1000}, 64, true, false);  // one sequence over shuffled blocks
      for (int batch : {2, 5, 8, 33}) {
        std::vector<int> rows(batch);
        for (int b = 0; b < batch; ++b) rows[b] = lens[(b + batch) % kLens];
        for (int block_size : {16, 64, 256}) add(type, s, 1100, rows, block_size, batch != 2, batch % 2 == 1);
      }
    }
  }

  // LLaMA-7B (MHA) and Llama-3-8B (GQA 4) decode steps, as the executor
  // launches them; LLaMA-7B for 8 sequences as a batching engine would.
  const HeadShape llama7b{32, 32, 128}, llama3{32, 8, 128};
  for (int len : {512, 4096}) add(ElementType::BF16, llama7b, 4096, {len}, kBs, false, true, "llama-7b");
  for (int len : {1024, 8192}) add(ElementType::BF16, llama3, 8192, {len}, kBs, false, true, "llama-3-8b");
  add(ElementType::BF16, llama7b, 4096, std::vector<int>(8, 512), kBs, true, true, "llama-7b");
  add(ElementType::F8E4M3, llama7b, 4096, std::vector<int>(8, 512), kBs, true, true, "llama-7b");

  // bf16 output rows (the GEMM path's decode steps): batches with padding
  // rows, a row past max_ctx's NaN check aside, GQA and MHA.
  for (const HeadShape& s : {HeadShape{8, 8, 64}, HeadShape{16, 4, 128}, HeadShape{14, 2, 80}})
    t.push_back(std::make_unique<DecodeAttention>(ElementType::BF16, s, 1100, std::vector<int>{300, 0, 1, 1100, 64},
                                                  64, true, true, "", ElementType::BF16));
}

}  // namespace fsvd::optable
