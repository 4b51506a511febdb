// Cases of rmsnorm (prefill's norm launches): odd widths, one row and
// several, fp32 and bf16 outputs; widths a multiple of 4 up to and past
// what the kernel keeps in registers. The reference: cpu::rmsnorm.
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/norm.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr float kEps = 1e-5f;

// The RMSNorm of n rows, stored fp32 or bf16 (prefill's GEMM input).
class Rmsnorm final : public OpCase {
 public:
  Rmsnorm(int64_t n, int64_t dim, ElementType out, bool timed)
      : OpCase("rmsnorm", "n=" + to_string(n) + " dim=" + to_string(dim) + " out=" + type_name(out), timed),
        n_(n), dim_(dim), out_(out) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> x = input(), w = gain();
    std::vector<float> y(x.size());
    cpu::rmsnorm(x.data(), w.data(), n_, dim_, kEps, y.data());
    return {{"y", as_stored(y, out_),
             stored_tolerance(out_, 1e-6, "the CPU's arithmetic (sum of squares in double); only sum orders differ")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> x, w;
      DeviceArray y;
    };
    return device_op(
        State{to_device(input()), to_device(gain()), DeviceArray(n_ * dim_, out_)},
        [n = n_, dim = dim_](State& s, cudaStream_t stream) {
          cuda::rmsnorm(s.x.data(), s.w.data(), n, dim, kEps, s.y.data(), s.y.type(), stream);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override { return {double(n_ * dim_ * (4 + element_bytes(out_)) + dim_ * 4)}; }

 private:
  std::vector<float> input() const { return random_values(n_ * dim_, 21, 3.0f); }
  std::vector<float> gain() const {
    std::vector<float> w = random_values(dim_, 22, 0.1f);
    for (float& g : w) g += 1.0f;
    return w;
  }
  int64_t n_, dim_;
  ElementType out_;
};

}  // namespace

void add_norm_cases(Table& t) {
  for (ElementType out : {ElementType::F32, ElementType::BF16})
    for (int64_t dim : {1, 5, 777, 1028, 4096, 8192, 8193, 12288})
      for (int64_t n : {1, 3}) t.push_back(std::make_unique<Rmsnorm>(n, dim, out, false));
  t.push_back(std::make_unique<Rmsnorm>(512, 4096, ElementType::BF16, true));  // LLaMA-7B prefill, 512 tokens
}

}  // namespace fsvd::optable
