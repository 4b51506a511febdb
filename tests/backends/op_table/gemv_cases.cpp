// Cases of the decode GEMVs: both input kinds (fp32, SiLU(gate)·up) with and
// without the residual add, the RMSNorm-fused form, and grouped
// launches, for bf16 and fp32 weights (row padding NaN), under launch shapes
// from automatic to the most slices, with and without early weights (PDL);
// one input vector, and batches of 2..16 (vectors strided apart, the padding
// between them NaN in inputs and never written in outputs). The reference is
// cpu::matmul_nt on the values the device holds.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/linear_ops.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/gemv.h"
#include "backends/cuda/gemv_test_util.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "core/tensor.h"

namespace fsvd::optable {
namespace {

using cuda::DeviceVec;
using cuda::GemvConfig;
using std::to_string;

enum class Input { F32, SiluMul };
enum class Fusion { None, Residual, RmsNorm };

constexpr float kEps = 1e-5f;

std::string describe(GemvConfig c) {
  std::string s = c.warps == 0 && c.splits == 0 && c.rows_per_warp == 0
                      ? "auto"
                      : "w" + to_string(c.warps) + "s" + to_string(c.splits) + "r" + to_string(c.rows_per_warp);
  return c.early_weights ? s + "+pdl" : s;
}

std::string shape(int64_t rows, int64_t cols) { return "[" + to_string(rows) + "," + to_string(cols) + "]"; }

// [rows, cols] weights of `type` as the device holds them, and their device
// copy with the smallest row stride the layout contract allows (padding NaN).
std::vector<float> weights(int64_t rows, int64_t cols, uint64_t seed, ElementType type) {
  return as_stored(random_values(rows * cols, seed), type);
}
int64_t stride(int64_t cols, ElementType type) {
  const int64_t group = cuda::values_per_16_bytes(type);
  return (cols + group - 1) / group * group;
}
DeviceArray upload_weights(const std::vector<float>& w, int64_t rows, int64_t cols, ElementType type) {
  return DeviceArray(with_stride(w, rows, cols, stride(cols, type)), type);
}

// Where `batch` vectors of n values lie in a buffer: back to back for one,
// else a row stride past n (16-byte aligned for inputs, as batched launches
// need; outputs padded by 2).
int64_t input_stride(int64_t n, int batch) { return batch == 1 ? n : (n + 3) / 4 * 4 + 4; }
int64_t output_stride(int64_t n, int batch) { return batch == 1 ? n : n + 2; }

// y_b = W·x_b (+ residual) for `batch` vectors x_b at x + b * ldx, by the CPU
// backend, into y_b at b * ldy of `start` (its other values stay as they
// are), the result judged against the size of its terms. `staged`: the
// kernel forms x itself (SiLU·up with fast __expf and __fdividef, or the
// RMSNorm's fp32 sum of squares), within ~8 ulps (2^-20) of the CPU's x: the
// bound grows by twice that.
Expected product(std::string name, const std::vector<float>& w, int64_t rows, int64_t cols, const float* x,
                 int64_t ldx, int batch, std::vector<float> y, int64_t ldy, bool residual, bool staged = false) {
  const double terms = terms_norm(w.data(), rows, cols, cols, x, batch, ldx);
  double start = 0;
  for (int b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i) {
      float& v = y[b * ldy + i];
      if (!residual) v = 0.0f;  // zeros, not NaN: BLAS may scale y by beta = 0
      start += double{v} * v;
    }
  cpu::matmul_nt(x, ldx, batch, Tensor({rows, cols}, w), y.data(), ldy, residual ? 1.0f : 0.0f);
  const Tolerance tol = staged ? relative_l2(sum_tolerance(cols) + 0x1p-19, "fp32 sums in other orders, x staged")
                               : relative_l2(sum_tolerance(cols), "fp32 sums of cols products, other orders");
  return {std::move(name), std::move(y), tol, {}, std::sqrt(terms * terms + start)};
}

std::string batch_name(int batch) { return batch == 1 ? "" : " B=" + to_string(batch); }

class Gemv final : public OpCase {
 public:
  Gemv(ElementType type, int64_t rows, int64_t cols, Input input, Fusion fusion, GemvConfig cfg, std::string model,
       int batch = 1)
      : OpCase(op_name(fusion),
               type_name(type) + " " + shape(rows, cols) + " x=" + input_name(input) + " " + describe(cfg) +
                   batch_name(batch) + (model.empty() ? "" : " " + model),
               !model.empty()),
        type_(type), rows_(rows), cols_(cols), input_(input), fusion_(fusion), cfg_(cfg), batch_(batch),
        ldx_(input_stride(cols, batch)), ldy_(output_stride(rows, batch)) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> in = first();
    std::vector<float> x = in;
    if (input_ == Input::SiluMul) cpu::silu_mul(in.data(), second().data(), batch_ * cols_, x.data());
    if (fusion_ == Fusion::RmsNorm) cpu::rmsnorm(in.data(), gain().data(), batch_, cols_, kEps, x.data());
    return {product("y", weights(rows_, cols_, 61, type_), rows_, cols_, x.data(), cols_, batch_, start(), ldy_,
                    fusion_ == Fusion::Residual, input_ == Input::SiluMul || fusion_ == Fusion::RmsNorm)};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray w, x, second;  // x: x or SiLU's gate; second: SiLU's up or the norm's gain
      DeviceBuffer<float> y;
    };
    const cuda::DeviceMatrix shape{nullptr, rows_, cols_, stride(cols_, type_), type_};
    const bool second = input_ == Input::SiluMul || fusion_ == Fusion::RmsNorm;
    return device_op(
        State{upload_weights(weights(rows_, cols_, 61, type_), rows_, cols_, type_), strided(first()),
              fusion_ == Fusion::RmsNorm ? DeviceArray(gain(), ElementType::F32)
                                         : strided(second ? this->second() : std::vector<float>()),
              to_device(start())},
        [shape, input = input_, fusion = fusion_, cfg = cfg_, batch = batch_, ldx = ldx_, ldy = ldy_](
            State& s, cudaStream_t stream) {
          cuda::DeviceMatrix w = shape;
          w.data = s.w.data();
          const auto* x = static_cast<const float*>(s.x.data());
          const auto* up = static_cast<const float*>(s.second.data());
          const DeviceVec v = input == Input::SiluMul ? DeviceVec::silu_mul(x, up, ldx) : DeviceVec::f32(x, ldx);
          if (fusion == Fusion::RmsNorm)
            cuda::rmsnorm_gemv(w, v, up, kEps, {s.y.data(), ldy}, batch, stream, cfg);
          else if (fusion == Fusion::Residual)
            cuda::gemv_residual(w, v, {s.y.data(), ldy}, batch, stream, cfg);
          else
            cuda::gemv(w, v, {s.y.data(), ldy}, batch, stream, cfg);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override {
    const double x_bytes = input_ == Input::F32 && fusion_ != Fusion::RmsNorm ? 4 : 8;
    const double y_bytes = fusion_ == Fusion::Residual ? 8 : 4;
    return {double(rows_ * cols_ * element_bytes(type_)) + batch_ * (cols_ * x_bytes + rows_ * y_bytes),
            2.0 * batch_ * rows_ * cols_};
  }

 private:
  static std::string op_name(Fusion f) {
    return f == Fusion::RmsNorm ? "rmsnorm_gemv" : f == Fusion::Residual ? "gemv_residual" : "gemv";
  }
  static std::string input_name(Input i) { return i == Input::F32 ? "f32" : "silu_mul"; }
  // The vectors x (or SiLU's gate), then SiLU's up, back to back; the norm's gain (around 1).
  std::vector<float> first() const { return random_values(batch_ * cols_, 62); }
  std::vector<float> second() const { return random_values(batch_ * cols_, 63); }
  std::vector<float> gain() const {
    std::vector<float> v = random_values(cols_, 63, 0.2f);
    for (float& g : v) g += 1.0f;
    return v;
  }
  // Vectors laid out as the launch reads them.
  DeviceArray strided(const std::vector<float>& v) const {
    return v.empty() ? DeviceArray(0, ElementType::F32)
                     : DeviceArray(with_stride(v, batch_, cols_, ldx_), ElementType::F32);
  }
  // y before the launch: the residual, or NaN (every vector must be written,
  // and the padding between them never).
  std::vector<float> start() const {
    return fusion_ == Fusion::Residual ? random_values(batch_ * ldy_, 64)
                                       : std::vector<float>(batch_ * ldy_, std::numeric_limits<float>::quiet_NaN());
  }
  ElementType type_;
  int64_t rows_, cols_;
  Input input_;
  Fusion fusion_;
  GemvConfig cfg_;
  int batch_;
  int64_t ldx_, ldy_;
};

using Shapes = std::vector<std::array<int64_t, 2>>;  // [rows, cols] of each group

std::string describe(const Shapes& shapes) {
  std::string s;
  for (const auto& [rows, cols] : shapes) s += shape(rows, cols);
  return s;
}

// One launch of products y_g = W_g·x_g, x_g consecutive slices of one packed
// vector (the q, k, v or gate, up second factors' rank-space input), over
// `batch` such vectors (each slice starting 16-byte aligned when batched).
class GemvGrouped final : public OpCase {
 public:
  GemvGrouped(ElementType type, Shapes shapes, GemvConfig cfg, std::string model, int batch = 1)
      : OpCase("gemv_grouped",
               type_name(type) + " " + describe(shapes) + " " + describe(cfg) + batch_name(batch) +
                   (model.empty() ? "" : " " + model),
               !model.empty()),
        type_(type), shapes_(std::move(shapes)), cfg_(cfg), batch_(batch) {
    for (const auto& [rows, cols] : shapes_) {
      offsets_.push_back(ld_);
      ld_ += batch == 1 ? cols : (cols + 3) / 4 * 4;
    }
    if (batch > 1) ld_ += 4;
  }

  std::vector<Expected> reference() const override {
    const std::vector<float> x = input();
    std::vector<Expected> out;
    for (size_t g = 0; g < shapes_.size(); ++g) {
      const auto [rows, cols] = shapes_[g];
      const int64_t ldy = output_stride(rows, batch_);
      out.push_back(product("y" + to_string(g), weights(rows, cols, 70 + g, type_), rows, cols,
                            x.data() + offsets_[g], ld_, batch_,
                            std::vector<float>(batch_ * ldy, std::numeric_limits<float>::quiet_NaN()), ldy, false));
    }
    return out;
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      std::vector<DeviceArray> w;
      DeviceBuffer<float> x;
      std::vector<DeviceBuffer<float>> y;
      std::vector<cuda::GemvGroup> groups;  // pointing into the buffers above
    };
    State state{{}, to_device(input()), {}, {}};
    for (size_t g = 0; g < shapes_.size(); ++g) {
      const auto [rows, cols] = shapes_[g];
      const int64_t ldy = output_stride(rows, batch_);
      state.w.push_back(upload_weights(weights(rows, cols, 70 + g, type_), rows, cols, type_));
      state.y.push_back(poisoned<float>(batch_ * ldy));
      state.groups.push_back({{state.w.back().data(), rows, cols, stride(cols, type_), type_},
                              DeviceVec::f32(state.x.data() + offsets_[g], ld_),
                              {state.y.back().data(), ldy}});
    }
    return device_op(
        std::move(state),
        [cfg = cfg_, batch = batch_](State& s, cudaStream_t stream) {
          cuda::gemv_grouped(s.groups.data(), static_cast<int>(s.groups.size()), batch, stream, cfg);
        },
        [](State& s, cudaStream_t) {
          Outputs out;
          for (const DeviceBuffer<float>& y : s.y) out.push_back(y.download());
          return out;
        });
  }

  Cost cost() const override {
    double bytes = 0, flops = 0;
    for (const auto& [rows, cols] : shapes_) {
      bytes += double(rows * cols * element_bytes(type_)) + batch_ * (cols + rows) * 4.0;
      flops += 2.0 * batch_ * rows * cols;
    }
    return {bytes, flops};
  }

 private:
  // The packed vectors, NaN between the slices.
  std::vector<float> input() const {
    std::vector<float> x(batch_ * ld_, std::numeric_limits<float>::quiet_NaN());
    const std::vector<float> values = random_values(batch_ * ld_, 69);
    for (int b = 0; b < batch_; ++b)
      for (size_t g = 0; g < shapes_.size(); ++g)
        for (int64_t i = 0; i < shapes_[g][1]; ++i) {
          const int64_t k = b * ld_ + offsets_[g] + i;
          x[k] = values[k];
        }
    return x;
  }
  ElementType type_;
  Shapes shapes_;
  GemvConfig cfg_;
  int batch_;
  std::vector<int64_t> offsets_;  // of each group's slice in a packed vector
  int64_t ld_ = 0;                // from one packed vector to the next
};

}  // namespace

void add_gemv_cases(Table& t) {
  // The GEMV tests' launch shapes (automatic to the most slices); single
  // products also automatic with early weights, grouped ones every shape
  // with and without.
  const auto& launches = cuda::testutil::kConfigs;
  std::vector<GemvConfig> configs(std::begin(launches), std::end(launches));
  configs.push_back({0, 0, true});
  const ElementType types[] = {ElementType::BF16, ElementType::F32};
  for (ElementType type : types)
    for (int64_t rows : {1, 7, 129, 1000}) {
      for (int64_t cols : {1, 8, 1491, 4096, 11008})
        for (Input input : {Input::F32, Input::SiluMul})
          for (Fusion fusion : {Fusion::None, Fusion::Residual})
            for (GemvConfig cfg : configs)
              t.push_back(std::make_unique<Gemv>(type, rows, cols, input, fusion, cfg, ""));
      for (int64_t cols : {1, 8, 1491, 4096, 8192})  // the norm stages at most 8192 columns
        for (GemvConfig cfg : configs)
          t.push_back(std::make_unique<Gemv>(type, rows, cols, Input::F32, Fusion::RmsNorm, cfg, ""));
    }
  // Unequal and odd ranks, groups whose columns give fewer slices than the
  // launch's cluster (idle CTAs), groups wider than one slice.
  const Shapes sets[] = {{{129, 1491}},
                         {{1000, 1024}, {7, 683}},
                         {{1000, 1024}, {129, 683}, {1, 1491}},
                         {{7, 8}, {1000, 4096}, {129, 1}},
                         {{129, 11008}, {7, 1491}, {1000, 8}, {1, 4096}}};
  for (ElementType type : types)
    for (const Shapes& set : sets)
      for (GemvConfig cfg : launches)
        for (bool early : {false, true}) {
          cfg.early_weights = early;
          t.push_back(std::make_unique<GemvGrouped>(type, set, cfg, ""));
        }

  // Batches of every tile, vectors left over in it (3, 5, 13) or not, every
  // input kind and fusion: few rows with wide rows (windows and slices), an
  // odd rank, a row narrower than one group step, a large odd matrix.
  const int batches[] = {2, 3, 4, 5, 8, 13, 16};
  const GemvConfig batched_configs[] = {{}, {0, 0, true}, {3, 8}, {6, 3, false, 2}};
  struct Form {
    Input input;
    Fusion fusion;
  };
  const Form forms[] = {{Input::F32, Fusion::None},
                        {Input::F32, Fusion::Residual},
                        {Input::SiluMul, Fusion::None},
                        {Input::SiluMul, Fusion::Residual},
                        {Input::F32, Fusion::RmsNorm}};
  for (ElementType type : types)
    for (int batch : batches) {
      for (auto [rows, cols] : {std::array<int64_t, 2>{7, 11008}, {129, 1491}, {1000, 8}})
        for (Form f : forms)
          for (GemvConfig cfg : batched_configs)
            if (f.fusion != Fusion::RmsNorm || cols <= cuda::kMaxRmsnormGemvCols)
              t.push_back(std::make_unique<Gemv>(type, rows, cols, f.input, f.fusion, cfg, "", batch));
      if (batch == 3 || batch == 8 || batch == 16)
        for (Form f : forms)
          t.push_back(std::make_unique<Gemv>(type, 1491, 4100, f.input, f.fusion, GemvConfig{0, 0, true}, "", batch));
      for (const Shapes& set : {sets[1], sets[4]})
        for (GemvConfig cfg : {GemvConfig{}, GemvConfig{3, 8, true}})
          t.push_back(std::make_unique<GemvGrouped>(type, set, cfg, "", batch));
    }

  // The LLaMA-7B decode step's launches as the executor makes them (bf16,
  // automatic plans, early weights): keep 0.5 (ranks 1024 for attention, 1492
  // for the MLP), dense, and the lm_head.
  const GemvConfig pdl{0, 0, true};
  const ElementType bf16 = ElementType::BF16;
  auto decode = [&](int64_t rows, int64_t cols, Input input, Fusion fusion, const char* what, int batch = 1) {
    t.push_back(std::make_unique<Gemv>(bf16, rows, cols, input, fusion, pdl, what, batch));
  };
  decode(3072, 4096, Input::F32, Fusion::RmsNorm, "llama-7b keep0.5 q|k|v first");
  decode(1024, 4096, Input::F32, Fusion::None, "llama-7b keep0.5 o first");
  decode(4096, 1024, Input::F32, Fusion::Residual, "llama-7b keep0.5 o second");
  decode(2992, 4096, Input::F32, Fusion::RmsNorm, "llama-7b keep0.5 gate|up first");
  decode(1492, 11008, Input::SiluMul, Fusion::None, "llama-7b keep0.5 down first");
  decode(4096, 1492, Input::F32, Fusion::Residual, "llama-7b keep0.5 down second");
  decode(12288, 4096, Input::F32, Fusion::RmsNorm, "llama-7b dense q|k|v");
  decode(4096, 4096, Input::F32, Fusion::Residual, "llama-7b dense o");
  decode(22016, 4096, Input::F32, Fusion::RmsNorm, "llama-7b dense gate|up");
  decode(4096, 11008, Input::SiluMul, Fusion::Residual, "llama-7b dense down");
  decode(32000, 4096, Input::F32, Fusion::RmsNorm, "llama-7b lm_head");
  t.push_back(std::make_unique<GemvGrouped>(bf16, Shapes{{4096, 1024}, {4096, 1024}, {4096, 1024}}, pdl,
                                            "llama-7b keep0.5 q,k,v second"));
  t.push_back(std::make_unique<GemvGrouped>(bf16, Shapes{{11008, 1492}, {11008, 1492}}, pdl,
                                            "llama-7b keep0.5 gate,up second"));
  // The keep-0.5 step for 8 sequences at once (continuous batching).
  decode(3072, 4096, Input::F32, Fusion::RmsNorm, "llama-7b keep0.5 q|k|v first", 8);
  decode(1024, 4096, Input::F32, Fusion::None, "llama-7b keep0.5 o first", 8);
  decode(4096, 1024, Input::F32, Fusion::Residual, "llama-7b keep0.5 o second", 8);
  decode(2992, 4096, Input::F32, Fusion::RmsNorm, "llama-7b keep0.5 gate|up first", 8);
  decode(1492, 11008, Input::SiluMul, Fusion::None, "llama-7b keep0.5 down first", 8);
  decode(4096, 1492, Input::F32, Fusion::Residual, "llama-7b keep0.5 down second", 8);
  t.push_back(std::make_unique<GemvGrouped>(bf16, Shapes{{4096, 1024}, {4096, 1024}, {4096, 1024}}, pdl,
                                            "llama-7b keep0.5 q,k,v second", 8));
  t.push_back(std::make_unique<GemvGrouped>(bf16, Shapes{{11008, 1492}, {11008, 1492}}, pdl,
                                            "llama-7b keep0.5 gate,up second", 8));
}

}  // namespace fsvd::optable
