// Cases of fill_synthetic: a synthetic model's values generated in place on
// the device, against the host's synthetic_value (what make_synthetic_model
// fills host tensors with). Padding columns stay unwritten (NaN).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/synthetic_weights.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "model/synthetic.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr uint64_t kSeed = 5;
constexpr uint32_t kTensor = 77;

// A matrix [rows, cols] of row stride ld, or (vector) n = cols norm gains around 1.
class FillSynthetic final : public OpCase {
 public:
  FillSynthetic(ElementType type, int64_t rows, int64_t cols, int64_t ld, bool vector, std::string model)
      : OpCase("fill_synthetic",
               vector ? "vector n=" + to_string(cols)
                      : type_name(type) + " [" + to_string(rows) + "," + to_string(cols) + "] ld=" + to_string(ld) +
                            (model.empty() ? "" : " " + model),
               !model.empty()),
        type_(type), rows_(rows), cols_(cols), ld_(ld), vector_(vector), scale_(synthetic_scale(cols)) {}

  std::vector<Expected> reference() const override {
    std::vector<float> m(rows_ * ld_, std::numeric_limits<float>::quiet_NaN());
    const float scale = vector_ ? kSyntheticNormSpread : scale_;
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c)
        m[r * ld_ + c] = synthetic_value(kSeed, kTensor, static_cast<uint64_t>(r * cols_ + c), scale, vector_);
    return {{"values", m, exact("one hash and bf16 rounding on both sides; bf16-exact values store exactly")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray m;
    };
    return device_op(
        State{DeviceArray(rows_ * ld_, type_)},
        [rows = rows_, cols = cols_, ld = ld_, vector = vector_, scale = scale_](State& s, cudaStream_t stream) {
          if (vector)
            cuda::fill_synthetic(static_cast<float*>(s.m.data()), cols, kSeed, kTensor, kSyntheticNormSpread, true,
                                 stream);
          else
            cuda::fill_synthetic(s.m.data(), s.m.type(), rows, cols, ld, kSeed, kTensor, scale, stream);
        },
        [](State& s, cudaStream_t) { return Outputs{s.m.download()}; });
  }

  Cost cost() const override { return {double(rows_ * cols_ * element_bytes(type_))}; }

 private:
  ElementType type_;
  int64_t rows_, cols_, ld_;
  bool vector_;
  float scale_;
};

}  // namespace

void add_synthetic_weights_cases(Table& t) {
  t.push_back(std::make_unique<FillSynthetic>(ElementType::BF16, 7, 1491, 1496, false, ""));
  t.push_back(std::make_unique<FillSynthetic>(ElementType::F32, 129, 33, 40, false, ""));
  t.push_back(std::make_unique<FillSynthetic>(ElementType::F32, 1, 4097, 4097, true, ""));
  // LLaMA-7B's q projection, as a 7B benchmark model is built.
  t.push_back(std::make_unique<FillSynthetic>(ElementType::BF16, 4096, 4096, 4096, false, "llama-7b q"));
}

}  // namespace fsvd::optable
