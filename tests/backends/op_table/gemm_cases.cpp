// Cases of the GEMM (cuBLASLt, or skinny_gemm for a decode step's few
// rows): Y = X·Wᵀ for bf16 and fp32 operands, written fp32 or bf16 or added to Y (the residual, fp32 or the encoder's
// bf16), plus a bias and GELU in the epilogue (the encoder's), with padded row
// strides (the columns past a row's end keep their values), a chunk long
// enough for the algorithm choice by timing, and the batched form prefill
// runs the gate and up second factors with. The reference is cpu::matmul_nt.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/linear_ops.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/skinny_gemm.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "core/tensor.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Problem {
  ElementType type;    // of W and X
  int64_t out, in, n;  // W [out, in], X [n, in]
  ElementType y_type;
  std::string name() const {
    return type_name(type) + " W=[" + to_string(out) + "," + to_string(in) + "] n=" + to_string(n) +
           " y=" + type_name(y_type);
  }
};

// bf16 outputs round each product once on either side; the rare value whose
// two fp32 sums straddle a rounding boundary moves one step (2^-8 relative RMS
// at most), so the bound is the sum bound plus half a step.
Tolerance product_tolerance(const Problem& p) {
  return p.y_type == ElementType::F32
             ? relative_l2(sum_tolerance(p.in), "fp32 sums of `in` products, other orders")
             : relative_l2(sum_tolerance(p.in) + kBf16Step / 2, "fp32 sums in other orders, then bf16 rounding");
}

// X [n, in] (row stride ldx) times Wᵀ, W [out, in] with row stride ldw, by
// cpu::matmul_nt: contiguous [n, out].
std::vector<float> matmul(const std::vector<float>& w, int64_t ldw, const Problem& p, const float* x, int64_t ldx) {
  std::vector<float> wt(p.out * p.in);
  for (int64_t o = 0; o < p.out; ++o)
    for (int64_t i = 0; i < p.in; ++i) wt[o * p.in + i] = w[o * ldw + i];
  std::vector<float> y(p.n * p.out, 0.0f);
  cpu::matmul_nt(x, ldx, p.n, Tensor({p.out, p.in}, std::move(wt)), y.data(), p.out, 0.0f);
  return y;
}

// The epilogue: a bias of y's type added, then GELU (cuBLASLt's tanh form,
// against cpu::gelu's erf: at most ~1e-3 apart, below a bf16 step at the
// values where they differ most).
struct Epilogue {
  bool bias = false, gelu = false;
  std::string name() const { return std::string(bias ? " bias" : "") + (gelu ? " gelu" : ""); }
};

class GemmRun final : public OpCase {
 public:
  GemmRun(Problem p, bool accumulate, std::string model, Epilogue epilogue = {})
      : OpCase("Gemm::run",
               p.name() + (accumulate ? " accumulate" : "") + epilogue.name() + (model.empty() ? "" : " " + model),
               !model.empty()),
        p_(p), accumulate_(accumulate), epilogue_(epilogue), ldw_(cuda::round_up8(p.in)), ldx_(ldw_ + 8),
        ldy_(p.y_type == ElementType::F32 ? p.out + 3 : cuda::round_up8(p.out) + 8) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> x = as_stored(input(), p_.type), w = as_stored(weights(), p_.type);
    const std::vector<float> xw = matmul(w, ldw_, p_, x.data(), ldx_);
    std::vector<float> y = as_stored(start(), p_.y_type);
    const std::vector<float> b = as_stored(bias(), p_.y_type);
    double start_norm = 0;
    for (int64_t r = 0; r < p_.n; ++r)
      for (int64_t o = 0; o < p_.out; ++o) {
        float& v = y[r * ldy_ + o];
        start_norm += accumulate_ ? double{v} * v : 0.0;
        v = (accumulate_ ? v : 0.0f) + xw[r * p_.out + o] + (epilogue_.bias ? b[o] : 0.0f);
        if (epilogue_.gelu) cpu::gelu(&v, 1);
      }
    const double terms = terms_norm(w.data(), p_.out, p_.in, ldw_, x.data(), p_.n, ldx_);
    Tolerance tol = product_tolerance(p_);
    if (epilogue_.gelu) tol.rel += 1e-3, tol.why += "; tanh GELU against erf";
    return {{"y", as_stored(y, p_.y_type), tol, {}, std::sqrt(terms * terms + start_norm)}};
  }

  std::unique_ptr<DeviceOp> upload(Device& device) const override {
    struct State {
      DeviceArray w, x, y, b;
    };
    return device_op(
        State{DeviceArray(weights(), p_.type), DeviceArray(input(), p_.type), DeviceArray(start(), p_.y_type),
              DeviceArray(bias(), p_.y_type)},
        [&gemm = device.gemm(), p = p_, acc = accumulate_, e = epilogue_, ldw = ldw_, ldx = ldx_, ldy = ldy_](
            State& s, cudaStream_t) {
          gemm.run({s.w.data(), p.out, p.in, ldw, p.type}, s.x.data(), ldx, p.n, s.y.data(), ldy, p.y_type, acc,
                   e.bias ? s.b.data() : nullptr, e.gelu ? cuda::Epilogue::gelu_bias : cuda::Epilogue::bias);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override {
    const double e = element_bytes(p_.type), ye = element_bytes(p_.y_type) * (accumulate_ ? 2 : 1);
    return {p_.out * p_.in * e + p_.n * p_.in * e + p_.n * p_.out * ye, 2.0 * p_.n * p_.out * p_.in};
  }

 private:
  // W with its padding columns (never read: W's cols is `in`), X with a wider stride.
  std::vector<float> weights() const { return random_values(p_.out * ldw_, 81); }
  std::vector<float> input() const { return random_values(p_.n * ldx_, 82); }
  // Y before the product: what it adds to, or NaN where a bf16 product must write.
  std::vector<float> start() const {
    return p_.y_type == ElementType::F32 || accumulate_ ? random_values(p_.n * ldy_, 83)
                                                        : std::vector<float>(p_.n * ldy_, kNaN);
  }
  std::vector<float> bias() const { return random_values(p_.out, 84); }
  Problem p_;
  bool accumulate_;
  Epilogue epilogue_;
  int64_t ldw_, ldx_, ldy_;
};

// `batch` products in one launch: product b on W rows [b * out, (b + 1) *
// out), X columns [b * x_step, b * x_step + in) and Y columns [b * out,
// (b + 1) * out) of rows of stride batch * out (prefill's gate | up).
class GemmBatched final : public OpCase {
 public:
  // with_bias: product b adds values [b * out, (b + 1) * out) of one bias
  // vector of y's type (the encoder's q, k, v second factors).
  GemmBatched(Problem p, int batch, std::string model, bool with_bias = false)
      : OpCase("Gemm::run_batched",
               p.name() + " batch=" + to_string(batch) + (with_bias ? " bias" : "") + (model.empty() ? "" : " " + model),
               !model.empty()),
        p_(p), batch_(batch), with_bias_(with_bias), ldw_(cuda::round_up8(p.in)), x_step_(ldw_),
        ldx_(batch * x_step_ + 8), ldy_(batch * p.out) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> x = as_stored(input(), p_.type), w = as_stored(weights(), p_.type);
    const std::vector<float> bias = as_stored(biases(), p_.y_type);
    std::vector<float> y(p_.n * ldy_);
    double terms = 0;
    for (int b = 0; b < batch_; ++b) {
      const std::vector<float> wb(w.begin() + b * p_.out * ldw_, w.begin() + (b + 1) * p_.out * ldw_);
      const std::vector<float> yb = matmul(wb, ldw_, p_, x.data() + b * x_step_, ldx_);
      for (int64_t r = 0; r < p_.n; ++r)
        for (int64_t o = 0; o < p_.out; ++o)
          y[r * ldy_ + b * p_.out + o] = yb[r * p_.out + o] + (with_bias_ ? bias[b * p_.out + o] : 0.0f);
      const double t = terms_norm(wb.data(), p_.out, p_.in, ldw_, x.data() + b * x_step_, p_.n, ldx_);
      terms += t * t;
    }
    return {{"y", as_stored(y, p_.y_type), product_tolerance(p_), {}, std::sqrt(terms)}};
  }

  std::unique_ptr<DeviceOp> upload(Device& device) const override {
    struct State {
      DeviceArray w, x, b, y;
    };
    return device_op(
        State{DeviceArray(weights(), p_.type), DeviceArray(input(), p_.type), DeviceArray(biases(), p_.y_type),
              DeviceArray(p_.n * ldy_, p_.y_type)},
        [&gemm = device.gemm(), p = p_, batch = batch_, bias = with_bias_, ldw = ldw_, ldx = ldx_, x_step = x_step_,
         ldy = ldy_](State& s, cudaStream_t) {
          gemm.run_batched({s.w.data(), p.out, p.in, ldw, p.type}, s.x.data(), ldx, x_step, p.n, s.y.data(), ldy,
                           p.out, batch, p.y_type, bias ? s.b.data() : nullptr);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override {
    const double e = element_bytes(p_.type);
    return {batch_ * (p_.out * p_.in * e + p_.n * p_.in * e + p_.n * p_.out * double(element_bytes(p_.y_type))),
            2.0 * batch_ * p_.n * p_.out * p_.in};
  }

 private:
  std::vector<float> weights() const { return random_values(batch_ * p_.out * ldw_, 84); }
  std::vector<float> input() const { return random_values(p_.n * ldx_, 85); }
  std::vector<float> biases() const { return random_values(batch_ * p_.out, 86); }
  Problem p_;
  int batch_;
  bool with_bias_;
  int64_t ldw_, x_step_, ldx_, ldy_;
};

// An RMSNorm folded into a decode step's products (cuda::Fold, through
// Gemm::run): `reads` the norm (X = bf16(x · gain) rows, the residual's
// per-64-column sums of squares, Y scaled by 1 / rms(x row)), or `writes`
// its input (Y fp32 added to, then gained = bf16(Y · gain) and Y's sums of
// squares). The reference is cpu::rmsnorm's arithmetic on the same rows.
class GemmNormFold final : public OpCase {
 public:
  enum class Side { reads, writes };
  GemmNormFold(Problem p, Side side)
      : OpCase("Gemm::run", p.name() + (side == Side::reads ? " rmsnorm folded in" : " accumulate, gained out"),
               false),
        p_(p), side_(side), ldw_(cuda::round_up8(p.in)), ldx_(ldw_ + 8),
        ldy_(p.y_type == ElementType::F32 ? p.out + 4 : cuda::round_up8(p.out) + 8), ldg_(cuda::round_up8(p.out)) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> w = as_stored(weights(), p_.type), g = gain();
    if (side_ == Side::reads) {
      // X rows are bf16(x · gain); Y = (X · Wᵀ) / rms(x) per row.
      const std::vector<float> x = residual();
      std::vector<float> xg(p_.n * ldx_, 0.0f);
      for (int64_t r = 0; r < p_.n; ++r)
        for (int64_t k = 0; k < p_.in; ++k) xg[r * ldx_ + k] = round_bf16(x[r * ldx_ + k] * g[k]);
      const std::vector<float> xw = matmul(w, ldw_, p_, xg.data(), ldx_);
      std::vector<float> y(p_.n * ldy_, kNaN);
      for (int64_t r = 0; r < p_.n; ++r) {
        double ss = 0;
        for (int64_t k = 0; k < p_.in; ++k) ss += double{x[r * ldx_ + k]} * x[r * ldx_ + k];
        const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(p_.in)) + kEps);
        for (int64_t o = 0; o < p_.out; ++o) y[r * ldy_ + o] = xw[r * p_.out + o] * inv;
      }
      Tolerance tol = product_tolerance(p_);
      tol.rel += 1e-6, tol.why += "; 1/rms from sums in other orders";
      return {{"y", as_stored(y, p_.y_type), tol}};
    }
    // Y += X · Wᵀ, then gained = bf16(Y · gain) and Y's sums of squares.
    const std::vector<float> xs = as_stored(input(), p_.type);
    const std::vector<float> xw = matmul(w, ldw_, p_, xs.data(), ldx_);
    std::vector<float> y = start();
    std::vector<float> gained(p_.n * ldg_, kNaN);
    for (int64_t r = 0; r < p_.n; ++r)
      for (int64_t o = 0; o < p_.out; ++o) {
        float& v = y[r * ldy_ + o];
        v += xw[r * p_.out + o];
        gained[r * ldg_ + o] = round_bf16(v * g[o]);
      }
    const Tolerance tol = product_tolerance(p_);
    return {{"y", y, tol},
            {"gained", gained, relative_l2(tol.rel + kBf16Step / 2, tol.why + "; then bf16 rounding of y · gain")},
            {"sums", sums_of(y, ldy_, p_.out), relative_l2(2 * tol.rel, "squares of y within the product's bound")}};
  }

  std::unique_ptr<DeviceOp> upload(Device& device) const override {
    struct State {
      DeviceArray w, x, y, gain, gained, sums;
    };
    const bool reads = side_ == Side::reads;
    const std::vector<float> g = gain(), x = residual();
    std::vector<float> xg = x;
    for (int64_t r = 0; r < p_.n; ++r)
      for (int64_t k = 0; k < p_.in; ++k) xg[r * ldx_ + k] *= g[k];
    return device_op(
        State{DeviceArray(weights(), p_.type), DeviceArray(reads ? xg : input(), p_.type),
              reads ? DeviceArray(p_.n * ldy_, p_.y_type) : DeviceArray(start(), ElementType::F32),
              DeviceArray(g, ElementType::F32), DeviceArray(p_.n * ldg_, ElementType::BF16),
              reads ? DeviceArray(sums_of(x, ldx_, p_.in), ElementType::F32)
                    : DeviceArray(cuda::norm_sums_floats(p_.out), ElementType::F32)},
        [&gemm = device.gemm(), p = p_, reads, ldw = ldw_, ldx = ldx_, ldy = ldy_, ldg = ldg_](State& s,
                                                                                            cudaStream_t) {
          cuda::Fold fold;
          auto* sums = static_cast<float*>(s.sums.data());
          if (reads) {
            fold.sums_in = sums, fold.eps = kEps;
          } else {
            fold.gained = s.gained.bf16(), fold.gained_ld = ldg, fold.gain = static_cast<const float*>(s.gain.data());
            fold.sums_out = sums;
          }
          gemm.run({s.w.data(), p.out, p.in, ldw, p.type}, s.x.data(), ldx, p.n, s.y.data(), ldy, p.y_type, !reads,
                   nullptr, cuda::Epilogue::bias, fold);
        },
        [reads](State& s, cudaStream_t) {
          return reads ? Outputs{s.y.download()} : Outputs{s.y.download(), s.gained.download(), s.sums.download()};
        });
  }

  Cost cost() const override {
    const double e = element_bytes(p_.type);
    return {p_.out * p_.in * e + p_.n * p_.in * e + p_.n * p_.out * 4.0, 2.0 * p_.n * p_.out * p_.in};
  }

 private:
  static constexpr float kEps = 1e-5f;
  // The sums of squares of rows [0, n) of v (row stride ld, `width` values)
  // per cuda::kNormSumCols columns, [tile][8 rows] (rows past n: 0).
  std::vector<float> sums_of(const std::vector<float>& v, int64_t ld, int64_t width) const {
    std::vector<float> sums(cuda::norm_sums_floats(width), 0.0f);
    for (int64_t r = 0; r < p_.n; ++r)
      for (int64_t c = 0; c < width; ++c) sums[c / cuda::kNormSumCols * 8 + r] += v[r * ld + c] * v[r * ld + c];
    return sums;
  }
  std::vector<float> weights() const { return random_values(p_.out * ldw_, 91); }
  std::vector<float> input() const { return random_values(p_.n * ldx_, 92); }
  std::vector<float> residual() const { return random_values(p_.n * ldx_, 93, 3.0f); }  // the norm's fp32 rows
  std::vector<float> start() const { return random_values(p_.n * ldy_, 94, 3.0f); }
  std::vector<float> gain() const {
    std::vector<float> g = random_values(std::max(p_.in, p_.out), 95, 0.1f);
    for (float& v : g) v += 1.0f;
    return g;
  }
  Problem p_;
  Side side_;
  int64_t ldw_, ldx_, ldy_, ldg_;
};

// SiLU·up folded into a decode step's product (cuda::Fold::silu_up, through
// Gemm::run): X holds gate rows and the up rows lie `up_` columns further in
// the same rows (prefill's gate | up buffer); the product's input is
// bf16(silu(gate) · up). The reference is cpu::silu_mul, rounded to bf16, then
// cpu::matmul_nt.
class GemmSiluFold final : public OpCase {
 public:
  GemmSiluFold(Problem p, bool accumulate, std::string model)
      : OpCase("Gemm::run", p.name() + (accumulate ? " accumulate" : "") + " silu(x)·up in" +
                                (model.empty() ? "" : " " + model),
               !model.empty()),
        p_(p), accumulate_(accumulate), ldw_(cuda::round_up8(p.in)), up_(ldw_ + 8), ldx_(2 * up_),
        ldy_(p.y_type == ElementType::F32 ? p.out + 3 : cuda::round_up8(p.out) + 8) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> gu = as_stored(input(), ElementType::BF16), w = as_stored(weights(), p_.type);
    std::vector<float> act(p_.n * p_.in);
    for (int64_t r = 0; r < p_.n; ++r) cpu::silu_mul(&gu[r * ldx_], &gu[r * ldx_ + up_], p_.in, &act[r * p_.in]);
    act = as_stored(act, ElementType::BF16);
    const std::vector<float> xw = matmul(w, ldw_, p_, act.data(), p_.in);
    std::vector<float> y = start();
    double start_norm = 0;
    for (int64_t r = 0; r < p_.n; ++r)
      for (int64_t o = 0; o < p_.out; ++o) {
        float& v = y[r * ldy_ + o];
        start_norm += accumulate_ ? double{v} * v : 0.0;
        v = (accumulate_ ? v : 0.0f) + xw[r * p_.out + o];
      }
    const double terms = terms_norm(w.data(), p_.out, p_.in, ldw_, act.data(), p_.n, p_.in);
    Tolerance tol = product_tolerance(p_);
    tol.rel += 1e-4, tol.why += "; an input's bf16 rounding may flip where the fast silu and std::exp differ";
    return {{"y", as_stored(y, p_.y_type), tol, {}, std::sqrt(terms * terms + start_norm)}};
  }

  std::unique_ptr<DeviceOp> upload(Device& device) const override {
    struct State {
      DeviceArray w, x, y;
    };
    return device_op(
        State{DeviceArray(weights(), p_.type), DeviceArray(input(), ElementType::BF16), DeviceArray(start(), p_.y_type)},
        [&gemm = device.gemm(), p = p_, acc = accumulate_, ldw = ldw_, up = up_, ldx = ldx_, ldy = ldy_](
            State& s, cudaStream_t) {
          cuda::Fold fold;
          fold.silu_up = s.x.bf16() + up;
          gemm.run({s.w.data(), p.out, p.in, ldw, p.type}, s.x.data(), ldx, p.n, s.y.data(), ldy, p.y_type, acc,
                   nullptr, cuda::Epilogue::bias, fold);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override {
    const double e = element_bytes(p_.type), ye = element_bytes(p_.y_type) * (accumulate_ ? 2 : 1);
    return {p_.out * p_.in * e + 2 * p_.n * p_.in * 2.0 + p_.n * p_.out * ye, 2.0 * p_.n * p_.out * p_.in};
  }

 private:
  std::vector<float> weights() const { return random_values(p_.out * ldw_, 101); }
  std::vector<float> input() const { return random_values(p_.n * ldx_, 102, 3.0f); }  // gate and up
  std::vector<float> start() const {
    return accumulate_ ? random_values(p_.n * ldy_, 103) : std::vector<float>(p_.n * ldy_, kNaN);
  }
  Problem p_;
  bool accumulate_;
  int64_t ldw_, up_, ldx_, ldy_;
};

}  // namespace

void add_gemm_cases(Table& t) {
  const ElementType kBf16 = ElementType::BF16, kF32 = ElementType::F32;
  // Odd shapes; the last has enough rows to time the algorithms on first use
  // (Gemm::kTuneMinRows), where accumulating must still add the product once.
  static_assert(cuda::Gemm::kTuneMinRows <= 1100);
  struct Shape {
    int64_t out, in, n;
  };
  for (const Shape& s :
       {Shape{1, 1, 1}, Shape{37, 91, 5}, Shape{300, 129, 64}, Shape{64, 1491, 17}, Shape{72, 96, 1100}}) {
    for (ElementType type : {kBf16, kF32})
      for (bool accumulate : {false, true})
        t.push_back(std::make_unique<GemmRun>(Problem{type, s.out, s.in, s.n, kF32}, accumulate, ""));
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, s.out, s.in, s.n, kBf16}, false, ""));
  }
  // Products of 8-row multiples: a batch's output columns start 16-byte aligned.
  for (const Shape& s : {Shape{40, 91, 5}, Shape{296, 129, 64}, Shape{64, 1491, 17}, Shape{72, 96, 1100}}) {
    t.push_back(std::make_unique<GemmBatched>(Problem{kBf16, s.out, s.in, s.n, kBf16}, 2, ""));
    t.push_back(std::make_unique<GemmBatched>(Problem{kBf16, s.out, s.in, s.n, kF32}, 2, ""));
    t.push_back(std::make_unique<GemmBatched>(Problem{kF32, s.out, s.in, s.n, kF32}, 2, ""));
  }

  // The encoder's: bias (and GELU) epilogues, residual adds into bf16 rows;
  // q, k, v second factors with their biases in one batched GEMM.
  for (const Shape& s : {Shape{40, 91, 5}, Shape{296, 129, 64}, Shape{72, 96, 1100}})
    for (ElementType type : {kBf16, kF32})
      t.push_back(std::make_unique<GemmBatched>(Problem{type, s.out, s.in, s.n, type}, 3, "", true));
  for (const Shape& s : {Shape{37, 91, 5}, Shape{296, 129, 64}, Shape{72, 96, 1100}}) {
    for (ElementType type : {kBf16, kF32}) {
      t.push_back(std::make_unique<GemmRun>(Problem{type, s.out, s.in, s.n, type}, false, "", Epilogue{true, false}));
      t.push_back(std::make_unique<GemmRun>(Problem{type, s.out, s.in, s.n, type}, true, "", Epilogue{true, false}));
    }
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, s.out, s.in, s.n, kBf16}, false, "", Epilogue{true, true}));
  }
  // Decode steps: odd shapes, K split over a cluster or not, bf16 rows added
  // to; a batch's sequences at LLaMA-7B keep 0.5 and dense shapes (up to
  // cuda::kSkinnyAnyRows rows on skinny_gemm, first factors, K >= N, up to
  // cuda::kSkinnyMaxRows in its 16- and 32-row tilings, the dense down on
  // cuBLASLt from 9 rows (cuda::kSkinnyMaxWeights); cuBLASLt otherwise).
  for (const Shape& s : {Shape{1000, 300, 3}, Shape{200, 2000, 7}, Shape{130, 520, 8}, Shape{9, 4099, 33},
                         Shape{200, 2000, 13}, Shape{130, 520, 32}, Shape{300, 1000, 27}, Shape{1000, 300, 20}}) {
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, s.out, s.in, s.n, kF32}, true, ""));
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, s.out, s.in, s.n, kBf16}, true, ""));
    t.push_back(std::make_unique<GemmBatched>(Problem{kBf16, s.out, s.in, s.n, kF32}, 3, ""));
  }
  // RMSNorm folded into decode products of up to cuda::kSkinnyAnyRows rows:
  // K in one slice or split over a cluster, fp32 or bf16 out; the gained
  // copy of a residual added to.
  for (const Shape& s : {Shape{40, 64, 1}, Shape{4000, 128, 6}, Shape{1000, 300, 3}, Shape{130, 4096, 8},
                         Shape{200, 2000, 7}, Shape{40, cuda::kMaxNormWidth, 5}})
    for (ElementType y : {kF32, kBf16})
      t.push_back(std::make_unique<GemmNormFold>(Problem{kBf16, s.out, s.in, s.n, y}, GemmNormFold::Side::reads));
  for (const Shape& s : {Shape{64, 40, 1}, Shape{9000, 96, 6}, Shape{300, 1000, 3}, Shape{4096, 130, 8},
                         Shape{4096, 1024, 8}})
    t.push_back(std::make_unique<GemmNormFold>(Problem{kBf16, s.out, s.in, s.n, kF32}, GemmNormFold::Side::writes));
  // SiLU·up folded into decode products of up to cuda::kSkinnyAnyRows rows:
  // one slice or a cluster's, bf16 out (a low-rank down's first factor) or
  // fp32 added to (a dense down's).
  for (const Shape& s : {Shape{40, 64, 1}, Shape{1000, 300, 3}, Shape{130, 520, 8}, Shape{37, 4099, 5},
                         Shape{4096, 1000, 7}}) {
    t.push_back(std::make_unique<GemmSiluFold>(Problem{kBf16, s.out, s.in, s.n, kBf16}, false, ""));
    t.push_back(std::make_unique<GemmSiluFold>(Problem{kBf16, s.out, s.in, s.n, kF32}, true, ""));
  }
  for (const int64_t rows : {cuda::kSkinnyAnyRows, int64_t{16}, cuda::kSkinnyMaxRows, int64_t{64}}) {
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 3072, 4096, rows, kBf16}, false, "llama-7b keep0.5 q|k|v first"));
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 4096, 1024, rows, kF32}, true, "llama-7b keep0.5 o second"));
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 1492, 11008, rows, kBf16}, false, "llama-7b keep0.5 down first"));
    if (rows <= cuda::kSkinnyAnyRows)
      t.push_back(
          std::make_unique<GemmSiluFold>(Problem{kBf16, 1492, 11008, rows, kBf16}, false, "llama-7b keep0.5 down first"));
    t.push_back(
        std::make_unique<GemmBatched>(Problem{kBf16, 11008, 1496, rows, kBf16}, 2, "llama-7b keep0.5 gate,up second"));
    t.push_back(std::make_unique<GemmBatched>(Problem{kBf16, 4096, 1024, rows, kF32}, 3, "llama-7b keep0.5 q,k,v second"));
    t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 4096, 11008, rows, kF32}, true, "llama-7b dense down"));
  }
  // A LLaMA-7B prefill chunk of 2048 tokens: keep 0.5 (attention ranks
  // 1024, MLP 1492) and dense.
  const int64_t n = 2048;
  t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 3072, 4096, n, kBf16}, false, "llama-7b keep0.5 q|k|v first"));
  t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 4096, 1024, n, kF32}, false, "llama-7b keep0.5 q second"));
  t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 4096, 1024, n, kF32}, true, "llama-7b keep0.5 o second"));
  t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 1492, 11008, n, kBf16}, false, "llama-7b keep0.5 down first"));
  t.push_back(
      std::make_unique<GemmBatched>(Problem{kBf16, 11008, 1496, n, kBf16}, 2, "llama-7b keep0.5 gate,up second"));
  t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 12288, 4096, n, kF32}, false, "llama-7b dense q|k|v"));
  t.push_back(std::make_unique<GemmRun>(Problem{kBf16, 4096, 11008, n, kF32}, true, "llama-7b dense down"));
}

}  // namespace fsvd::optable
