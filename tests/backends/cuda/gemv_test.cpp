// The CUDA GEMVs against a double-precision CPU twin on odd shapes, every
// epilogue and input kind, with and without split-K, for bf16 and fp32 weights, and grouped
// launches against the separate calls. Skips when no GPU is present.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemv.h"

#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gemv_test_util.h"
#include "core/dtype.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

using testutil::describe;
using testutil::kConfigs;
using testutil::kTypes;
using testutil::type_name;

constexpr uint16_t kBf16NaN = 0x7fc0;
// fp32 accumulation of exactly the values the reference uses (whichever the
// weight type): only rounding differs, ~1e-7 relative; a lost, doubled or
// misplaced term is >= 1e-3.
constexpr double kTolerance = 1e-5;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// W [rows, cols] of `type` (random fp32 values, rounded for bf16), stored with
// the smallest row stride the upload contract allows (cols rounded up to 8
// bf16 or 4 fp32 values); the padding is NaN, so any use of it shows.
struct TestMatrix {
  int64_t rows, cols, ld;
  ElementType type;
  std::vector<double> values;  // [rows, cols], the weights as stored
  DeviceBuffer<uint16_t> bf16;
  DeviceBuffer<float> f32;

  TestMatrix(int64_t r, int64_t c, uint64_t seed, ElementType t)
      : rows(r), cols(c), ld(round_up(c, values_per_16_bytes(t))), type(t) {
    const std::vector<float> v = testing::random_normal(r * c, seed);
    std::vector<uint16_t> bits(t == ElementType::BF16 ? r * ld : 0, kBf16NaN);
    std::vector<float> full(t == ElementType::F32 ? r * ld : 0, std::numeric_limits<float>::quiet_NaN());
    values.resize(r * c);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        if (t == ElementType::BF16) {
          bits[i * ld + j] = f32_to_bf16(v[i * c + j]);
          values[i * c + j] = bf16_to_f32(bits[i * ld + j]);
        } else {
          values[i * c + j] = full[i * ld + j] = v[i * c + j];
        }
      }
    bf16 = DeviceBuffer<uint16_t>(bits.size());
    bf16.upload(bits);
    f32 = DeviceBuffer<float>(full.size());
    f32.upload(full);
  }
  // The first n rows as a device matrix.
  DeviceMatrix view(int64_t n) const {
    const void* data = type == ElementType::F32 ? static_cast<const void*>(f32.data()) : bf16.data();
    return {data, n, cols, ld, type};
  }
  // W[row0 .. row0 + n) · x in double.
  std::vector<double> times(int64_t row0, int64_t n, const std::vector<float>& x) const {
    std::vector<double> y(n);
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t j = 0; j < cols; ++j) s += values[(row0 + i) * cols + j] * x[j];
      y[i] = s;
    }
    return y;
  }
};

// An fp32 input vector on the device; `values` are what the kernel sees.
struct TestVec {
  std::vector<float> values;
  DeviceBuffer<float> f32;

  TestVec(int64_t n, uint64_t seed) : values(testing::random_normal(n, seed)), f32(n) { f32.upload(values); }
  // The values from `offset` on.
  DeviceVec dev(int64_t offset = 0) const { return DeviceVec::f32(f32.data() + offset); }
  std::vector<float> slice(int64_t offset, int64_t n) const {
    return {values.begin() + offset, values.begin() + offset + n};
  }
};

void poison_nan(DeviceBuffer<float>& y) {
  FSVD_CUDA_CHECK(cudaMemset(y.data(), 0xff, y.bytes()));  // all-ones bits: NaN
}

// ||out - ref|| / ||ref||, infinite when any output is not finite (unwritten).
double relative_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

class CudaGemv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// The tests that run a GEMV, for each weight type.
class CudaGemvTyped : public CudaGemv, public ::testing::WithParamInterface<ElementType> {};

TEST_P(CudaGemvTyped, EveryEpilogueAndInputMatchesDoubleReferenceOnOddShapes) {
  const ElementType type = GetParam();
  uint64_t seed = 100;
  double worst = 0;  // reported in the test's properties
  for (int64_t rows : {1, 7, 129, 1000}) {
    for (int64_t cols : {1, 8, 1491, 4096, 11008}) {
      const TestMatrix w(rows, cols, ++seed, type);
      DeviceBuffer<float> y(rows);
      // Every input kind; for silu(gate)·up the CPU twin cpu::silu_mul forms the reference input.
      using Kind = DeviceVec::Kind;
      for (Kind input : {Kind::F32, Kind::SiluMul}) {
        const TestVec xg(cols, ++seed), xu(cols, ++seed);
        std::vector<float> x = xg.values;
        DeviceVec xv = xg.dev();
        if (input == Kind::SiluMul) {
          cpu::silu_mul(xg.values.data(), xu.values.data(), cols, x.data());
          xv = DeviceVec::silu_mul(xg.f32.data(), xu.f32.data());
        }
        const std::vector<double> want = w.times(0, rows, x);
        const std::vector<float> resid = testing::random_normal(rows, ++seed);
        std::vector<double> want_resid(rows);
        for (int64_t i = 0; i < rows; ++i) want_resid[i] = resid[i] + want[i];
        const char* names[] = {"x fp32 ", "x silu(gate)*up "};
        for (GemvConfig cfg : kConfigs) {
          SCOPED_TRACE("W [" + std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                       names[static_cast<int>(input)] + describe(cfg));
          poison_nan(y);
          gemv(w.view(rows), xv, y.data(), nullptr, cfg);
          const double plain = relative_error(y.download(), want);
          EXPECT_LT(plain, kTolerance) << "plain";

          y.upload(resid);
          gemv_residual(w.view(rows), xv, y.data(), nullptr, cfg);
          const double residual = relative_error(y.download(), want_resid);
          EXPECT_LT(residual, kTolerance) << "residual";
          worst = std::max({worst, plain, residual});
        }
      }
    }
  }
  RecordProperty("worst_rel_error", ::testing::PrintToString(worst));
}

TEST_P(CudaGemvTyped, RmsnormGemvMatchesCpuNormThenDoubleGemv) {
  const ElementType type = GetParam();
  uint64_t seed = 200;
  double worst = 0;
  for (int64_t rows : {1, 7, 129, 1000}) {
    for (int64_t cols : {1, 8, 1491, 4096, 8192}) {
      const TestMatrix w(rows, cols, ++seed, type);
      const TestVec x(cols, ++seed);
      std::vector<float> gain = testing::random_normal(cols, ++seed, 0.2f);
      for (float& g : gain) g += 1.0f;
      DeviceBuffer<float> gain_dev(cols), y(rows);
      gain_dev.upload(gain);
      const float eps = 1e-5f;
      std::vector<float> normed(cols);
      cpu::rmsnorm(x.values.data(), gain.data(), 1, cols, eps, normed.data());
      const std::vector<double> want = w.times(0, rows, normed);
      for (GemvConfig cfg : kConfigs) {
        SCOPED_TRACE("W [" + std::to_string(rows) + ", " + std::to_string(cols) + "] " +
                     describe(cfg));
        poison_nan(y);
        rmsnorm_gemv(w.view(rows), x.f32.data(), gain_dev.data(), eps, y.data(), nullptr, cfg);
        const double err = relative_error(y.download(), want);
        EXPECT_LT(err, kTolerance);
        worst = std::max(worst, err);
      }
    }
  }
  RecordProperty("worst_rel_error", ::testing::PrintToString(worst));
}

// The split-K reduction adds the slices' partials in a fixed order, so
// repeated launches and graph replays give identical bits.
TEST_P(CudaGemvTyped, SplitKIsBitwiseReproducibleAcrossLaunchesAndGraphReplays) {
  const ElementType type = GetParam();
  const TestMatrix w(1000, 4096, 300, type);
  const TestVec x(4096, 301);
  const std::vector<double> want = w.times(0, 1000, x.values);
  DeviceBuffer<float> y(1000);
  const GemvConfig cfg{8, 7};
  poison_nan(y);
  gemv(w.view(1000), x.dev(), y.data(), nullptr, cfg);
  const std::vector<float> first = y.download();
  ASSERT_LT(relative_error(first, want), kTolerance);

  cudaStream_t stream = nullptr;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  gemv(w.view(1000), x.dev(), y.data(), stream, cfg);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    poison_nan(y);
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> again = y.download();
    EXPECT_EQ(std::memcmp(again.data(), first.data(), first.size() * sizeof(float)), 0)
        << "replay " << replay;
  }
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
}

// With early_weights a GEMV starts before the previous kernel ends; it must
// still read that kernel's output only once it is complete. The input is
// poisoned before every run, so an early read shows as NaN.
TEST_P(CudaGemvTyped, EarlyWeightsStillWaitsForThePreviousKernelsOutput) {
  const ElementType type = GetParam();
  const TestMatrix w1(1000, 11008, 400, type), w2(129, 1000, 401, type);
  const TestVec x(11008, 402);
  DeviceBuffer<float> t(1000), y(129);
  cudaStream_t stream = nullptr;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  auto chain = [&] {
    gemv(w1.view(1000), x.dev(), t.data(), stream, {0, 0, true});
    gemv(w2.view(129), DeviceVec::f32(t.data()), y.data(), stream, {0, 0, true});
  };
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  chain();
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (bool graphed : {false, true}) {
    SCOPED_TRACE(graphed ? "graph replay" : "stream");
    poison_nan(t);
    poison_nan(y);
    if (graphed)
      FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    else
      chain();
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> t_out = t.download();
    EXPECT_LT(relative_error(t_out, w1.times(0, 1000, x.values)), kTolerance);
    EXPECT_LT(relative_error(y.download(), w2.times(0, 129, t_out)), kTolerance);
  }
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
}

// Products of a grouped launch: W_g [rows, cols] reading x_g, a slice of one
// packed vector (the rank-space vector of the q, k, v first factors).
struct TestGroups {
  std::vector<TestMatrix> w;
  std::vector<int64_t> offset;  // of x_g in the packed vector
  int64_t packed = 0;

  TestGroups(const std::vector<std::array<int64_t, 2>>& shapes, uint64_t seed, ElementType type) {
    w.reserve(shapes.size());
    for (const auto& [rows, cols] : shapes) {
      w.emplace_back(rows, cols, ++seed, type);
      offset.push_back(packed);
      packed += cols;
    }
  }
  int count() const { return static_cast<int>(w.size()); }
  std::vector<GemvGroup> groups(const TestVec& x, std::vector<DeviceBuffer<float>>& y) const {
    std::vector<GemvGroup> g;
    for (int i = 0; i < count(); ++i) g.push_back({w[i].view(w[i].rows), x.dev(offset[i]), y[i].data()});
    return g;
  }
  std::vector<DeviceBuffer<float>> outputs() const {
    std::vector<DeviceBuffer<float>> y;
    for (const TestMatrix& m : w) {
      y.emplace_back(m.rows);
      poison_nan(y.back());
    }
    return y;
  }
  std::vector<double> want(int i, const TestVec& x) const {
    return w[i].times(0, w[i].rows, x.slice(offset[i], w[i].cols));
  }
};

std::string describe(const std::vector<std::array<int64_t, 2>>& shapes) {
  std::string s;
  for (const auto& [rows, cols] : shapes) s += "[" + std::to_string(rows) + ", " + std::to_string(cols) + "] ";
  return s;
}

// One launch gives each product what its own gemv() gives: bitwise when the
// launch shape is the same (an explicit config, or one group), else within
// rounding of the double reference. Covers unequal and odd ranks, products
// whose columns give fewer slices than the launch's cluster (idle CTAs), and
// products wider than one slice.
TEST_P(CudaGemvTyped, GroupedMatchesSeparateCallsOnOddShapes) {
  const ElementType type = GetParam();
  const std::vector<std::vector<std::array<int64_t, 2>>> sets = {
      {{129, 1491}},
      {{1000, 1024}, {7, 683}},
      {{1000, 1024}, {129, 683}, {1, 1491}},
      {{7, 8}, {1000, 4096}, {129, 1}},
      {{129, 11008}, {7, 1491}, {1000, 8}, {1, 4096}},
  };
  uint64_t seed = 500;
  double worst = 0;
  for (const auto& shapes : sets) {
    const TestGroups set(shapes, seed += 10, type);
    const TestVec x(set.packed, ++seed);
    for (GemvConfig cfg : kConfigs) {
      for (bool early : {false, true}) {
        cfg.early_weights = early;
        SCOPED_TRACE(describe(shapes) + describe(cfg) + (early ? " early" : ""));
        std::vector<DeviceBuffer<float>> y = set.outputs(), alone = set.outputs();
        const std::vector<GemvGroup> groups = set.groups(x, y);
        gemv_grouped(groups.data(), set.count(), nullptr, cfg);
        for (int i = 0; i < set.count(); ++i) gemv(groups[i].w, groups[i].x, alone[i].data(), nullptr, cfg);
        const bool same_shape = cfg.splits > 0 || set.count() == 1;
        for (int i = 0; i < set.count(); ++i) {
          const std::vector<float> out = y[i].download(), ref = alone[i].download();
          const double err = relative_error(out, set.want(i, x));
          EXPECT_LT(err, kTolerance) << "group " << i;
          worst = std::max(worst, err);
          if (same_shape) {
            EXPECT_EQ(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)), 0) << "group " << i;
          }
        }
      }
    }
  }
  RecordProperty("worst_rel_error", ::testing::PrintToString(worst));
}

// The decode chain: a GEMV writes the packed rank-space vector, the grouped
// launch with early_weights reads slices of it; every input is poisoned first.
TEST_P(CudaGemvTyped, GroupedEarlyWeightsWaitsForThePreviousKernelsOutput) {
  const ElementType type = GetParam();
  const TestGroups set({{129, 1024}, {1000, 683}, {7, 293}}, 600, type);
  const TestMatrix first(set.packed, 4096, 610, type);
  const TestVec x(4096, 611);
  DeviceBuffer<float> packed(set.packed);
  std::vector<DeviceBuffer<float>> y = set.outputs();
  std::vector<GemvGroup> groups;
  for (int i = 0; i < set.count(); ++i)
    groups.push_back({set.w[i].view(set.w[i].rows), DeviceVec::f32(packed.data() + set.offset[i]), y[i].data()});
  cudaStream_t stream = nullptr;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  auto chain = [&] {
    gemv(first.view(set.packed), x.dev(), packed.data(), stream, {0, 0, true});
    gemv_grouped(groups.data(), set.count(), stream, {0, 0, true});
  };
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  chain();
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (bool graphed : {false, true}) {
    SCOPED_TRACE(graphed ? "graph replay" : "stream");
    poison_nan(packed);
    for (DeviceBuffer<float>& yi : y) poison_nan(yi);
    if (graphed)
      FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    else
      chain();
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> t = packed.download();
    EXPECT_LT(relative_error(t, first.times(0, set.packed, x.values)), kTolerance);
    for (int i = 0; i < set.count(); ++i) {
      const std::vector<float> slice(t.begin() + set.offset[i], t.begin() + set.offset[i] + set.w[i].cols);
      EXPECT_LT(relative_error(y[i].download(), set.w[i].times(0, set.w[i].rows, slice)), kTolerance)
          << "group " << i;
    }
  }
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
}

INSTANTIATE_TEST_SUITE_P(Weights, CudaGemvTyped, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return type_name(info.param); });

void expect_error(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(CudaGemv, RejectsLayoutsItCannotRead) {
  DeviceBuffer<uint16_t> buf(64 * 16 + 8);
  DeviceBuffer<float> x(64), y(64);
  const auto* base = reinterpret_cast<const __nv_bfloat16*>(buf.data());
  const DeviceVec xv = DeviceVec::f32(x.data());
  constexpr ElementType kF32 = ElementType::F32;
  expect_error([&] { gemv({base, 16, 12, 12}, xv, y.data(), nullptr); }, "row stride 12");
  expect_error([&] { gemv({base, 16, 24, 16}, xv, y.data(), nullptr); }, "row stride 16");
  expect_error([&] { gemv({base, 16, 10, 10, kF32}, xv, y.data(), nullptr); }, "row stride 10");
  expect_error([&] { gemv({base, 16, 16, 12, kF32}, xv, y.data(), nullptr); }, "row stride 12");
  expect_error([&] { gemv({base + 1, 16, 16, 16}, xv, y.data(), nullptr); }, "16-byte aligned");
  expect_error([&] { gemv({base + 2, 8, 16, 16, kF32}, xv, y.data(), nullptr); }, "16-byte aligned");
  expect_error([&] { gemv({base, 1, 40000, 40000, kF32}, xv, y.data(), nullptr); }, "too large");
  expect_error([&] { gemv({base, 1, 40000, 40000}, xv, y.data(), nullptr); }, "too large");
  expect_error([&] { gemv({base, 4, 16, 16}, DeviceVec::silu_mul(x.data(), nullptr), y.data(), nullptr); },
               "silu_mul needs gate and up");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, x.data(), nullptr, 1e-5f, y.data(), nullptr); },
               "gain");
  expect_error([&] { rmsnorm_gemv({base, 1, 8200, 8200}, x.data(), x.data(), 1e-5f, y.data(), nullptr); },
               "at most 8192");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, x.data() + 1, x.data(), 1e-5f, y.data(), nullptr); },
               "16-byte aligned");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, x.data(), x.data() + 2, 1e-5f, y.data(), nullptr); },
               "16-byte aligned");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, y.data(), nullptr, {9, 0}); }, "warps");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, y.data(), nullptr, {0, 9}); }, "splits");
}

TEST_F(CudaGemv, GroupedRejectsBadGroupLists) {
  DeviceBuffer<uint16_t> buf(64 * 16);
  DeviceBuffer<float> x(64), y(64);
  const auto* base = reinterpret_cast<const __nv_bfloat16*>(buf.data());
  const DeviceVec xv = DeviceVec::f32(x.data());
  const DeviceMatrix ok{base, 4, 16, 16};
  const GemvGroup good{ok, xv, y.data()};
  auto grouped = [&](std::vector<GemvGroup> g, GemvConfig cfg = {}) {
    return [g, cfg] { gemv_grouped(g.data(), static_cast<int>(g.size()), nullptr, cfg); };
  };
  expect_error([&] { gemv_grouped(nullptr, 1, nullptr); }, "null group list");
  expect_error(grouped({}), "0 groups");
  expect_error(grouped({good, good, good, good, good}), "5 groups");
  expect_error(grouped({good, {{base, 4, 16, 16, ElementType::F32}, xv, y.data()}}), "another type");
  const DeviceVec silu = DeviceVec::silu_mul(x.data(), x.data());
  expect_error(grouped({good, {ok, silu, y.data()}}), "one kind");
  expect_error(grouped({{ok, silu, y.data()}, {ok, silu, y.data()}}), "for single GEMVs");
  expect_error(grouped({good, {{base, 4, 16, 12}, xv, y.data()}}), "group 1: row stride 12");
  expect_error(grouped({good, good, {ok, xv, nullptr}}), "group 2: null output");
  expect_error(grouped({good, {ok, DeviceVec::f32(nullptr), y.data()}}), "group 1: null input");
  expect_error(grouped({{{base + 1, 4, 16, 16}, xv, y.data()}, good}), "16-byte aligned");
  expect_error(grouped({good, good}, {9, 0}), "warps");
  expect_error([&] { plan_gemv_grouped(&good, 0, {}, 132); }, "0 groups");
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
