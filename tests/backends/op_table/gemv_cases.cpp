// Cases of the decode GEMVs: both input kinds (fp32, SiLU(gate)·up) with and
// without the residual add, the RMSNorm-fused form, and grouped
// launches, for bf16 and fp32 weights (row padding NaN), under launch shapes
// from automatic to the most slices, with and without early weights (PDL).
// The reference is cpu::matmul_nt on the values the device holds.
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

// y = W·x (+ residual) by the CPU backend, the result judged against the
// size of its terms. `staged`: the kernel forms x itself (SiLU·up with fast
// __expf and __fdividef, or the RMSNorm's fp32 sum of squares), within ~8
// ulps (2^-20) of the CPU's x: the bound grows by twice that.
Expected product(std::string name, const std::vector<float>& w, int64_t rows, int64_t cols, const float* x,
                 const std::vector<float>* residual, bool staged = false) {
  const double terms = terms_norm(w.data(), rows, cols, cols, x, 1, cols);
  double start = 0;
  std::vector<float> y(rows, 0.0f);  // zeros, not NaN: BLAS may scale y by beta = 0
  if (residual) {
    y = *residual;
    for (float v : y) start += double{v} * v;
  }
  cpu::matmul_nt(x, cols, 1, Tensor({rows, cols}, w), y.data(), rows, residual ? 1.0f : 0.0f);
  const Tolerance tol = staged ? relative_l2(sum_tolerance(cols) + 0x1p-19, "fp32 sums in other orders, x staged")
                               : relative_l2(sum_tolerance(cols), "fp32 sums of cols products, other orders");
  return {std::move(name), std::move(y), tol, {}, std::sqrt(terms * terms + start)};
}

class Gemv final : public OpCase {
 public:
  Gemv(ElementType type, int64_t rows, int64_t cols, Input input, Fusion fusion, GemvConfig cfg, std::string model)
      : OpCase(op_name(fusion),
               type_name(type) + " " + shape(rows, cols) + " x=" + input_name(input) + " " + describe(cfg) +
                   (model.empty() ? "" : " " + model),
               !model.empty()),
        type_(type), rows_(rows), cols_(cols), input_(input), fusion_(fusion), cfg_(cfg) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> in = first();
    std::vector<float> x = in;
    if (input_ == Input::SiluMul) cpu::silu_mul(in.data(), second().data(), cols_, x.data());
    if (fusion_ == Fusion::RmsNorm) cpu::rmsnorm(in.data(), second().data(), 1, cols_, kEps, x.data());
    const std::vector<float> y0 = start();
    return {product("y", weights(rows_, cols_, 61, type_), rows_, cols_, x.data(),
                    fusion_ == Fusion::Residual ? &y0 : nullptr,
                    input_ == Input::SiluMul || fusion_ == Fusion::RmsNorm)};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray w;
      DeviceBuffer<float> x, second, y;  // x: x or SiLU's gate; second: SiLU's up or the norm's gain
    };
    const cuda::DeviceMatrix shape{nullptr, rows_, cols_, stride(cols_, type_), type_};
    return device_op(
        State{upload_weights(weights(rows_, cols_, 61, type_), rows_, cols_, type_),
              to_device(first()),
              input_ == Input::F32 && fusion_ != Fusion::RmsNorm ? DeviceBuffer<float>() : to_device(second()),
              to_device(start())},
        [shape, input = input_, fusion = fusion_, cfg = cfg_](State& s, cudaStream_t stream) {
          cuda::DeviceMatrix w = shape;
          w.data = s.w.data();
          const DeviceVec v =
              input == Input::SiluMul ? DeviceVec::silu_mul(s.x.data(), s.second.data()) : DeviceVec::f32(s.x.data());
          if (fusion == Fusion::RmsNorm)
            cuda::rmsnorm_gemv(w, s.x.data(), s.second.data(), kEps, s.y.data(), stream, cfg);
          else if (fusion == Fusion::Residual)
            cuda::gemv_residual(w, v, s.y.data(), stream, cfg);
          else
            cuda::gemv(w, v, s.y.data(), stream, cfg);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override {
    const double x_bytes = input_ == Input::F32 && fusion_ != Fusion::RmsNorm ? 4 : 8;
    const double y_bytes = fusion_ == Fusion::Residual ? 8 : 4;
    return {double(rows_ * cols_ * element_bytes(type_)) + cols_ * x_bytes + rows_ * y_bytes,
            2.0 * rows_ * cols_};
  }

 private:
  static std::string op_name(Fusion f) {
    return f == Fusion::RmsNorm ? "rmsnorm_gemv" : f == Fusion::Residual ? "gemv_residual" : "gemv";
  }
  static std::string input_name(Input i) { return i == Input::F32 ? "f32" : "silu_mul"; }
  // x, or SiLU's gate; then SiLU's up or the norm's gain (around 1).
  std::vector<float> first() const { return random_values(cols_, 62); }
  std::vector<float> second() const {
    std::vector<float> v = random_values(cols_, 63, fusion_ == Fusion::RmsNorm ? 0.2f : 1.0f);
    if (fusion_ == Fusion::RmsNorm)
      for (float& g : v) g += 1.0f;
    return v;
  }
  // y before the launch: the residual, or NaN (every row must be written).
  std::vector<float> start() const {
    return fusion_ == Fusion::Residual ? random_values(rows_, 64)
                                       : std::vector<float>(rows_, std::numeric_limits<float>::quiet_NaN());
  }
  ElementType type_;
  int64_t rows_, cols_;
  Input input_;
  Fusion fusion_;
  GemvConfig cfg_;
};

using Shapes = std::vector<std::array<int64_t, 2>>;  // [rows, cols] of each group

std::string describe(const Shapes& shapes) {
  std::string s;
  for (const auto& [rows, cols] : shapes) s += shape(rows, cols);
  return s;
}

// One launch of products y_g = W_g·x_g, x_g consecutive slices of one packed
// vector (the q, k, v or gate, up second factors' rank-space input).
class GemvGrouped final : public OpCase {
 public:
  GemvGrouped(ElementType type, Shapes shapes, GemvConfig cfg, std::string model)
      : OpCase("gemv_grouped",
               type_name(type) + " " + describe(shapes) + " " + describe(cfg) + (model.empty() ? "" : " " + model),
               !model.empty()),
        type_(type), shapes_(std::move(shapes)), cfg_(cfg) {
    for (const auto& [rows, cols] : shapes_) packed_ += cols;
  }

  std::vector<Expected> reference() const override {
    const std::vector<float> x = input();
    std::vector<Expected> out;
    int64_t offset = 0;
    for (size_t g = 0; g < shapes_.size(); ++g) {
      const auto [rows, cols] = shapes_[g];
      out.push_back(product("y" + to_string(g), weights(rows, cols, 70 + g, type_), rows, cols, x.data() + offset,
                            nullptr));
      offset += cols;
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
    int64_t offset = 0;
    for (size_t g = 0; g < shapes_.size(); ++g) {
      const auto [rows, cols] = shapes_[g];
      state.w.push_back(upload_weights(weights(rows, cols, 70 + g, type_), rows, cols, type_));
      state.y.push_back(poisoned<float>(rows));
      state.groups.push_back({{state.w.back().data(), rows, cols, stride(cols, type_), type_},
                              DeviceVec::f32(state.x.data() + offset), state.y.back().data()});
      offset += cols;
    }
    return device_op(
        std::move(state),
        [cfg = cfg_](State& s, cudaStream_t stream) {
          cuda::gemv_grouped(s.groups.data(), static_cast<int>(s.groups.size()), stream, cfg);
        },
        [](State& s, cudaStream_t) {
          Outputs out;
          for (const DeviceBuffer<float>& y : s.y) out.push_back(y.download());
          return out;
        });
  }

  Cost cost() const override {
    double bytes = packed_ * 4.0, flops = 0;
    for (const auto& [rows, cols] : shapes_) {
      bytes += double(rows * cols * element_bytes(type_)) + rows * 4;
      flops += 2.0 * rows * cols;
    }
    return {bytes, flops};
  }

 private:
  std::vector<float> input() const { return random_values(packed_, 69); }
  ElementType type_;
  Shapes shapes_;
  GemvConfig cfg_;
  int64_t packed_ = 0;
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

  // The LLaMA-7B decode step's launches as the executor makes them (bf16,
  // automatic plans, early weights): keep 0.5 (ranks 1024 for attention, 1492
  // for the MLP), dense, and the lm_head.
  const GemvConfig pdl{0, 0, true};
  const ElementType bf16 = ElementType::BF16;
  auto decode = [&](int64_t rows, int64_t cols, Input input, Fusion fusion, const char* what) {
    t.push_back(std::make_unique<Gemv>(bf16, rows, cols, input, fusion, pdl, what));
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
}

}  // namespace fsvd::optable
