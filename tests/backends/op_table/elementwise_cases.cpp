// Cases of the element-wise row ops around the GEMVs and GEMMs: add_bias,
// silu_mul and stage_bf16, on odd shapes (the scalar tails) with row strides
// wider than the rows.
#include <cuda_bf16.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/elementwise.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Rows {
  int64_t rows, cols, ld;
  std::string name() const { return to_string(rows) + "x" + to_string(cols) + " ld=" + to_string(ld); }
};
// Odd widths take the scalar tails; 5x1000 (ld 1024) the 16-byte runs of every row.
const Rows kOddRows[] = {{1, 1, 1}, {1, 4097, 4097}, {3, 77, 80}, {37, 333, 401}, {5, 1000, 1024}};

// y[r][c] += b[c] over the rows; the columns past cols keep their values.
class AddBias final : public OpCase {
 public:
  AddBias(Rows s, bool timed) : OpCase("add_bias", s.name(), timed), s_(s) {}

  std::vector<Expected> reference() const override {
    std::vector<float> y = start(), b = bias();
    for (int64_t r = 0; r < s_.rows; ++r)
      for (int64_t c = 0; c < s_.cols; ++c) y[r * s_.ld + c] += b[c];
    return {{"y", y, exact("one fp32 add per element")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> y, b;
    };
    return device_op(
        State{to_device(start()), to_device(bias())},
        [s = s_](State& st, cudaStream_t stream) {
          cuda::add_bias(st.y.data(), s.ld, st.b.data(), s.rows, s.cols, stream);
        },
        [](State& st, cudaStream_t) { return Outputs{st.y.download()}; });
  }

  Cost cost() const override { return {double(s_.rows * s_.cols * 8 + s_.cols * 4)}; }

 private:
  std::vector<float> start() const { return random_values(s_.rows * s_.ld, 41); }
  std::vector<float> bias() const { return random_values(s_.cols, 42); }
  Rows s_;
};

// out = silu(gate) * up for rows of strided gate and up of `in` type, into
// contiguous rows of `out` type.
class SiluMul final : public OpCase {
 public:
  SiluMul(Rows s, ElementType in, ElementType out, bool timed)
      : OpCase("silu_mul", s.name() + " in=" + type_name(in) + " out=" + type_name(out), timed),
        s_(s), in_(in), out_(out) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> g = as_stored(gate(), in_), u = as_stored(up(), in_);
    std::vector<float> y(s_.rows * s_.cols);
    for (int64_t r = 0; r < s_.rows; ++r) cpu::silu_mul(&g[r * s_.ld], &u[r * s_.ld], s_.cols, &y[r * s_.cols]);
    return {{"out", as_stored(y, out_),
             stored_tolerance(out_, 4e-6,
                              "the CPU's fp32 formula; __expf within 2 + 1.2|x| ulps, __fdividef 2")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray gate, up, out;
    };
    return device_op(
        State{DeviceArray(gate(), in_), DeviceArray(up(), in_), DeviceArray(s_.rows * s_.cols, out_)},
        [s = s_](State& st, cudaStream_t stream) {
          cuda::silu_mul(st.gate.data(), s.ld, st.up.data(), s.ld, st.gate.type(), s.rows, s.cols, st.out.data(),
                         st.out.type(), stream);
        },
        [](State& st, cudaStream_t) { return Outputs{st.out.download()}; });
  }

  Cost cost() const override {
    return {double(s_.rows * s_.cols * (2 * element_bytes(in_) + element_bytes(out_))), 5.0 * s_.rows * s_.cols};
  }

 private:
  std::vector<float> gate() const { return random_values(s_.rows * s_.ld, 43, 3.0f); }
  std::vector<float> up() const { return random_values(s_.rows * s_.ld, 44); }
  Rows s_;
  ElementType in_, out_;
};

// Column segments of fp32 rows rounded into bf16 rows, each segment's columns
// up to the next multiple of 8 zeroed: one segment, or three odd ones placed
// at 8-aligned offsets.
class StageBf16 final : public OpCase {
 public:
  StageBf16(Rows s, std::vector<cuda::StageSegment> segments, bool timed)
      : OpCase("stage_bf16", s.name() + " segments=" + describe(segments), timed),
        s_(s), segments_(std::move(segments)),
        ldy_(segments_.back().dst_col + cuda::round_up8(segments_.back().cols) + 3) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> x = input();
    std::vector<float> y(s_.rows * ldy_, kNaN);  // the 3 columns past the last segment stay unwritten
    for (int64_t r = 0; r < s_.rows; ++r)
      for (const cuda::StageSegment& g : segments_)
        for (int64_t c = 0; c < cuda::round_up8(g.cols); ++c)
          y[r * ldy_ + g.dst_col + c] = c < g.cols ? round_bf16(x[r * s_.ld + g.src_col + c]) : 0.0f;
    return {{"y", y, exact("round to nearest even; the padding to 8 columns zero")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> x;
      DeviceArray y;
    };
    return device_op(
        State{to_device(input()), DeviceArray(s_.rows * ldy_, ElementType::BF16)},
        [s = s_, segments = segments_, ldy = ldy_](State& st, cudaStream_t stream) {
          cuda::stage_bf16(st.x.data(), s.ld, s.rows, segments.data(), static_cast<int>(segments.size()),
                           st.y.bf16(), ldy, stream);
        },
        [](State& st, cudaStream_t) { return Outputs{st.y.download()}; });
  }

  Cost cost() const override {
    double cols = 0;
    for (const cuda::StageSegment& g : segments_) cols += g.cols * 4 + cuda::round_up8(g.cols) * 2;
    return {s_.rows * cols};
  }

 private:
  static std::string describe(const std::vector<cuda::StageSegment>& segments) {
    std::string s;
    for (const cuda::StageSegment& g : segments)
      s += (s.empty() ? "" : ",") + to_string(g.src_col) + "+" + to_string(g.cols) + "@" + to_string(g.dst_col);
    return s;
  }
  std::vector<float> input() const { return random_values(s_.rows * s_.ld, 46); }
  Rows s_;
  std::vector<cuda::StageSegment> segments_;
  int64_t ldy_;
};

}  // namespace

void add_elementwise_cases(Table& t) {
  const ElementType kF32 = ElementType::F32, kBf16 = ElementType::BF16;
  for (const Rows& s : kOddRows) {
    t.push_back(std::make_unique<AddBias>(s, false));
    for (ElementType in : {kF32, kBf16})
      for (ElementType out : {kF32, kBf16}) t.push_back(std::make_unique<SiluMul>(s, in, out, false));
    const int64_t a = s.cols / 3, b = s.cols / 2 - a, a8 = cuda::round_up8(a);
    t.push_back(std::make_unique<StageBf16>(s, std::vector<cuda::StageSegment>{{0, s.cols, 0}}, false));
    t.push_back(std::make_unique<StageBf16>(
        s, std::vector<cuda::StageSegment>{{0, a, 0}, {a, b, a8}, {a + b, s.cols - a - b, a8 + cuda::round_up8(b)}},
        false));
  }
  // LLaMA-7B: prefill's q bias of 512 rows and decode's; the MLP activation
  // of 512 prompt rows (bf16 from the batched gate/up GEMM, or fp32); keep
  // 0.5's q|k|v ranks staged for their second factors.
  t.push_back(std::make_unique<AddBias>(Rows{512, 4096, 4096}, true));
  t.push_back(std::make_unique<AddBias>(Rows{1, 4096, 4096}, true));
  t.push_back(std::make_unique<SiluMul>(Rows{512, 11008, 22016}, kBf16, kBf16, true));
  t.push_back(std::make_unique<SiluMul>(Rows{512, 11008, 11008}, kF32, kBf16, true));
  t.push_back(std::make_unique<StageBf16>(
      Rows{512, 3072, 3072}, std::vector<cuda::StageSegment>{{0, 1024, 0}, {1024, 1024, 1024}, {2048, 1024, 2048}},
      true));
}

}  // namespace fsvd::optable
