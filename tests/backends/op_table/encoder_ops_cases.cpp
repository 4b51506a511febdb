// Cases of the encoder's ops: embed_layernorm, layernorm and gelu (fp32 and
// bf16 rows, odd widths) against cpu::layernorm / cpu::gelu; attention_f32
// and packed_attention (sequences of odd lengths packed without padding, one
// of a single row, q|k|v read in place from one packed buffer) against
// cpu::attention per sequence, non-causal. Timed: BERT-base, 32 x 512.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/encoder_ops.h"
#include "backends/cuda/flash_attention.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr float kEps = 1e-12f;

// Outputs of order 1 whose small values come from cancellation ((x - mean),
// 1 + erf(x) for negative x): relative to each value, plus an absolute term
// at the outputs' scale.
Tolerance cancelling_tolerance(ElementType type, const char* why) {
  return type == ElementType::BF16 ? elementwise(kBf16Step, 1e-5, why) : elementwise(1e-5, 1e-6, why);
}

std::vector<float> around_one(size_t n, uint64_t seed) {
  std::vector<float> w = random_values(n, seed, 0.1f);
  for (float& g : w) g += 1.0f;
  return w;
}

// Rows of `type` through LayerNorm in place; with `embed`, first gathered as
// word + position + type rows of three tables.
class Layernorm final : public OpCase {
 public:
  Layernorm(bool embed, int64_t n, int64_t dim, ElementType type, bool timed)
      : OpCase(embed ? "embed_layernorm" : "layernorm",
               "n=" + to_string(n) + " dim=" + to_string(dim) + " " + type_name(type), timed),
        embed_(embed), n_(n), dim_(dim), type_(type) {}

  std::vector<Expected> reference() const override {
    std::vector<float> x = embed_ ? gathered() : as_stored(input(), type_);
    cpu::layernorm(x.data(), gain().data(), shift().data(), n_, dim_, kEps, x.data());
    return {{"x", as_stored(x, type_), cancelling_tolerance(type_, "statistics in double both sides")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray x, words, positions, types;
      DeviceBuffer<int32_t> ids, pos, type_ids;
      DeviceBuffer<float> w, b;
    };
    State st{embed_ ? DeviceArray(static_cast<size_t>(n_ * dim_), type_) : DeviceArray(input(), type_),
             DeviceArray(table(kWords, 31), type_),
             DeviceArray(table(kPositions, 32), type_),
             DeviceArray(table(kTypes, 33), type_),
             to_device(ids()),
             to_device(positions()),
             to_device(type_ids()),
             to_device(gain()),
             to_device(shift())};
    return device_op(
        std::move(st),
        [embed = embed_, n = n_, dim = dim_, type = type_](State& s, cudaStream_t stream) {
          if (!embed) {
            cuda::layernorm(s.x.data(), type, s.w.data(), s.b.data(), n, dim, kEps, stream);
            return;
          }
          const cuda::EmbeddingTables tables{{s.words.data(), kWords, dim, dim, type},
                                             {s.positions.data(), kPositions, dim, dim, type},
                                             {s.types.data(), kTypes, dim, dim, type}};
          cuda::embed_layernorm(s.ids.data(), s.pos.data(), s.type_ids.data(), tables, s.w.data(), s.b.data(), kEps,
                                n, s.x.data(), stream);
        },
        [](State& s, cudaStream_t) { return Outputs{s.x.download()}; });
  }

  Cost cost() const override {
    const double e = double(element_bytes(type_));
    return {double(n_ * dim_) * (embed_ ? 4 * e : 2 * e) + dim_ * 8.0};
  }

 private:
  static constexpr int64_t kWords = 101, kPositions = 600, kTypes = 2;
  std::vector<float> input() const { return random_values(n_ * dim_, 41, 3.0f); }
  std::vector<float> gain() const { return around_one(dim_, 42); }
  std::vector<float> shift() const { return random_values(dim_, 43, 0.1f); }
  std::vector<float> table(int64_t rows, uint64_t seed) const { return random_values(rows * dim_, seed); }
  std::vector<int32_t> ids() const {
    std::vector<int32_t> v(n_);
    for (int64_t r = 0; r < n_; ++r) v[r] = static_cast<int32_t>((r * 37 + 5) % kWords);
    return v;
  }
  std::vector<int32_t> positions() const {
    std::vector<int32_t> v(n_);
    for (int64_t r = 0; r < n_; ++r) v[r] = static_cast<int32_t>(r % kPositions);
    return v;
  }
  std::vector<int32_t> type_ids() const {
    std::vector<int32_t> v(n_);
    for (int64_t r = 0; r < n_; ++r) v[r] = static_cast<int32_t>(r / 3 % 2);
    return v;
  }
  // The CPU twin's sum of the stored table rows, (word + position) + type.
  std::vector<float> gathered() const {
    const std::vector<float> w = as_stored(table(kWords, 31), type_), p = as_stored(table(kPositions, 32), type_),
                             t = as_stored(table(kTypes, 33), type_);
    const std::vector<int32_t> id = ids(), pos = positions(), ty = type_ids();
    std::vector<float> x(n_ * dim_);
    for (int64_t r = 0; r < n_; ++r)
      for (int64_t i = 0; i < dim_; ++i)
        x[r * dim_ + i] = w[id[r] * dim_ + i] + p[pos[r] * dim_ + i] + t[ty[r] * dim_ + i];
    return x;
  }
  bool embed_;
  int64_t n_, dim_;
  ElementType type_;
};

class Gelu final : public OpCase {
 public:
  Gelu(int64_t count, ElementType type, bool timed)
      : OpCase("gelu", "count=" + to_string(count) + " " + type_name(type), timed), count_(count), type_(type) {}

  std::vector<Expected> reference() const override {
    std::vector<float> x = as_stored(input(), type_);
    cpu::gelu(x.data(), count_);
    return {{"x", as_stored(x, type_), cancelling_tolerance(type_, "erff against std::erf")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    return device_op(
        DeviceArray(input(), type_),
        [count = count_, type = type_](DeviceArray& x, cudaStream_t stream) { cuda::gelu(x.data(), type, count, stream); },
        [](DeviceArray& x, cudaStream_t) { return Outputs{x.download()}; });
  }

  Cost cost() const override { return {double(count_) * 2 * element_bytes(type_)}; }

 private:
  std::vector<float> input() const { return random_values(count_, 51, 2.0f); }
  int64_t count_;
  ElementType type_;
};

// Sequences of `lens` packed into one buffer of q|k|v rows (row stride
// 3 * width + 8: the attention reads q, k and v in place), each attending
// over its own keys; bf16 (packed_attention) or fp32 (attention_f32); the
// output in a buffer of its own or (in_place) over q, as CudaEncoder writes it.
class PackedAttention final : public OpCase {
 public:
  PackedAttention(std::vector<int> lens, int heads, int head_dim, ElementType type, bool timed, bool in_place = false)
      : OpCase(type == ElementType::BF16 ? "packed_attention" : "attention_f32",
               "heads=" + to_string(heads) + " hd=" + to_string(head_dim) + " seqs=" + to_string(lens.size()) +
                   " first=" + to_string(lens[0]) + (in_place ? " in_place" : ""),
               timed),
        lens_(std::move(lens)), heads_(heads), hd_(head_dim), type_(type), in_place_(in_place),
        width_(int64_t{heads} * head_dim), ld_(3 * width_ + 8) {
    offsets_.push_back(0);
    for (int l : lens_) offsets_.push_back(offsets_.back() + l);
  }

  std::vector<Expected> reference() const override {
    const std::vector<float> qkv = as_stored(input(), type_);
    std::vector<float> out(rows() * width_);
    for (size_t s = 0; s < lens_.size(); ++s) {
      const float* base = qkv.data() + offsets_[s] * ld_;
      cpu::attention(base, ld_, {base + width_, base + 2 * width_, ld_}, lens_[s], 0, {heads_, heads_, hd_},
                     out.data() + offsets_[s] * width_, /*causal=*/false);
    }
    // bf16: the probabilities rounded for P·V and the output rounded, ~1.6e-3
    // together (prefill_attention's bound); fp32: only summation orders differ.
    return {{"out", as_stored(out, type_),
             type_ == ElementType::BF16 ? relative_l2(4e-3, "bf16 probabilities and output")
                                        : relative_l2(1e-5, "fp32, summation order")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray qkv, out;
      DeviceBuffer<int32_t> offsets;
    };
    return device_op(
        State{DeviceArray(input(), type_), DeviceArray(static_cast<size_t>(rows() * width_), type_),
              to_device(offsets_)},
        [this](State& s, cudaStream_t stream) {
          const int seqs = static_cast<int>(lens_.size());
          const int64_t ldo = in_place_ ? ld_ : width_;
          if (type_ == ElementType::BF16) {
            const __nv_bfloat16* base = s.qkv.bf16();
            cuda::packed_attention({base, ld_}, {base + width_, ld_}, {base + 2 * width_, ld_}, s.offsets.data(), seqs,
                                   max_len(), {heads_, heads_, hd_}, {in_place_ ? s.qkv.bf16() : s.out.bf16(), ldo},
                                   stream);
          } else {
            auto* base = static_cast<float*>(s.qkv.data());
            cuda::attention_f32(base, ld_, base + width_, base + 2 * width_, ld_, s.offsets.data(), seqs, max_len(),
                                rows(), heads_, hd_, in_place_ ? base : static_cast<float*>(s.out.data()), ldo, stream);
          }
        },
        [this](State& s, cudaStream_t) {
          if (!in_place_) return Outputs{s.out.download()};
          const std::vector<float> all = s.qkv.download();
          std::vector<float> out;
          for (int64_t r = 0; r < rows(); ++r) out.insert(out.end(), &all[r * ld_], &all[r * ld_ + width_]);
          return Outputs{out};
        });
  }

  Cost cost() const override {
    double flops = 0;
    for (int l : lens_) flops += 4.0 * l * l * width_;
    return {double(rows()) * 4 * width_ * element_bytes(type_), flops};
  }

 private:
  int64_t rows() const { return offsets_.back(); }
  int max_len() const {
    int m = 0;
    for (int l : lens_) m = std::max(m, l);
    return m;
  }
  std::vector<float> input() const { return random_values(rows() * ld_, 61); }
  std::vector<int> lens_;
  int heads_, hd_;
  ElementType type_;
  bool in_place_;
  int64_t width_, ld_;
  std::vector<int32_t> offsets_;
};

}  // namespace

void add_encoder_ops_cases(Table& t) {
  for (ElementType type : {ElementType::F32, ElementType::BF16})
    for (int64_t dim : {8, 384, 777, 10000})
      for (bool embed : {false, true}) t.push_back(std::make_unique<Layernorm>(embed, 5, dim, type, false));
  for (ElementType type : {ElementType::F32, ElementType::BF16}) t.push_back(std::make_unique<Gelu>(1001, type, false));
  t.push_back(std::make_unique<Layernorm>(true, 32 * 512, 768, ElementType::BF16, true));  // BERT-base, 32 x 512
  t.push_back(std::make_unique<Layernorm>(false, 32 * 512, 768, ElementType::BF16, true));
  t.push_back(std::make_unique<Gelu>(32 * 512 * 3072, ElementType::BF16, true));
  for (int hd : {64, 128}) {
    t.push_back(std::make_unique<PackedAttention>(std::vector<int>{1, 77, 300, 129, 16}, 3, hd, ElementType::BF16,
                                                  false));
    t.push_back(std::make_unique<PackedAttention>(std::vector<int>{1, 77, 300, 129, 16}, 3, hd, ElementType::F32,
                                                  false));
  }
  t.push_back(std::make_unique<PackedAttention>(std::vector<int>{5, 33}, 2, 32, ElementType::F32, false));
  for (ElementType type : {ElementType::F32, ElementType::BF16})
    t.push_back(std::make_unique<PackedAttention>(std::vector<int>{200, 1, 129}, 2, 64, type, false, true));
  t.push_back(std::make_unique<PackedAttention>(std::vector<int>(32, 512), 12, 64, ElementType::BF16, true));
  t.push_back(std::make_unique<PackedAttention>(std::vector<int>(2, 128), 12, 64, ElementType::F32, true));
}

}  // namespace fsvd::optable
