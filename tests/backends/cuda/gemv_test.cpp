// The CUDA GEMVs against a double-precision CPU twin on odd shapes, every
// epilogue, with and without split-K, for bf16 and fp32 weights. Skips when no
// GPU is present.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/device_buffer.h"
#include "core/dtype.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

constexpr uint16_t kBf16NaN = 0x7fc0;
// fp32 accumulation of exactly the values the reference uses (whichever the
// weight type): only rounding differs, ~1e-7 relative; a lost, doubled or
// misplaced term is >= 1e-3.
constexpr double kTolerance = 1e-5;
// silu(a) has relative condition |1 + a (1 - sigmoid(a))|, up to ~|a| ~ 100
// for these widths, so the same rounding can show 100x larger after it.
constexpr double kSiluTolerance = 1e-4;

const ElementType kTypes[] = {ElementType::BF16, ElementType::F32};

std::string type_name(ElementType t) { return t == ElementType::F32 ? "fp32" : "bf16"; }

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

// An input vector on the device, fp32 or bf16; `values` are what the kernel sees.
struct TestVec {
  std::vector<float> values;
  DeviceBuffer<float> f32;
  DeviceBuffer<uint16_t> bf16;

  TestVec(int64_t n, uint64_t seed, bool as_bf16) : values(testing::random_normal(n, seed)) {
    if (as_bf16) {
      std::vector<uint16_t> bits(n);
      for (int64_t i = 0; i < n; ++i) values[i] = bf16_to_f32(bits[i] = f32_to_bf16(values[i]));
      bf16 = DeviceBuffer<uint16_t>(n);
      bf16.upload(bits);
    } else {
      f32 = DeviceBuffer<float>(n);
      f32.upload(values);
    }
  }
  DeviceVec dev() const {
    return bf16.size() ? DeviceVec::bf16_values(reinterpret_cast<const __nv_bfloat16*>(bf16.data()))
                       : DeviceVec::f32(f32.data());
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

std::string describe(GemvConfig c) {
  return "warps " + std::to_string(c.warps) + " splits " + std::to_string(c.splits);
}

class CudaGemv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// The tests that run a GEMV, for each weight type.
class CudaGemvTyped : public CudaGemv, public ::testing::WithParamInterface<ElementType> {};

// Automatic choice, no split, an odd split with few warps, and the most splits.
const GemvConfig kConfigs[] = {{0, 0}, {8, 1}, {4, 7}, {3, 8}};

TEST_P(CudaGemvTyped, EveryEpilogueMatchesDoubleReferenceOnOddShapes) {
  const ElementType type = GetParam();
  uint64_t seed = 100;
  double worst = 0;  // of the plain and residual GEMVs, reported in the test's properties
  for (int64_t rows : {1, 7, 129, 1000}) {
    for (int64_t cols : {1, 8, 1491, 4096, 11008}) {
      const TestMatrix w(2 * rows, cols, ++seed, type);  // gate rows then up rows
      DeviceBuffer<float> y(rows);
      for (bool x_bf16 : {false, true}) {
        const TestVec xg(cols, ++seed, x_bf16), xu(cols, ++seed, x_bf16);
        const std::vector<double> gate = w.times(0, rows, xg.values);
        const std::vector<double> up = w.times(rows, rows, xu.values);
        const std::vector<float> resid = testing::random_normal(rows, ++seed);
        std::vector<double> want_resid(rows), want_silu(rows);
        for (int64_t i = 0; i < rows; ++i) {
          want_resid[i] = resid[i] + gate[i];
          want_silu[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
        }
        for (GemvConfig cfg : kConfigs) {
          SCOPED_TRACE("W [" + std::to_string(rows) + ", " + std::to_string(cols) + "] x " +
                       (x_bf16 ? "bf16 " : "fp32 ") + describe(cfg));
          poison_nan(y);
          gemv(w.view(rows), xg.dev(), y.data(), nullptr, cfg);
          const double plain = relative_error(y.download(), gate);
          EXPECT_LT(plain, kTolerance) << "plain";

          y.upload(resid);
          gemv_residual(w.view(rows), xg.dev(), y.data(), nullptr, cfg);
          const double residual = relative_error(y.download(), want_resid);
          EXPECT_LT(residual, kTolerance) << "residual";
          worst = std::max({worst, plain, residual});

          poison_nan(y);
          gemv_silu_mul(w.view(2 * rows), xg.dev(), xu.dev(), y.data(), nullptr, cfg);
          EXPECT_LT(relative_error(y.download(), want_silu), kSiluTolerance) << "silu";
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
      const TestVec x(cols, ++seed, false);
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
  const TestVec x(4096, 301, false);
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
  const TestVec x(11008, 402, false);
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
  expect_error([&] { gemv_silu_mul({base, 7, 16, 16}, xv, xv, y.data(), nullptr); }, "odd");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, x.data(), nullptr, 1e-5f, y.data(), nullptr); },
               "gain");
  expect_error([&] { rmsnorm_gemv({base, 1, 8200, 8200}, x.data(), x.data(), 1e-5f, y.data(), nullptr); },
               "at most 8192");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, y.data(), nullptr, {9, 0}); }, "warps");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, y.data(), nullptr, {0, 9}); }, "splits");
}

// Launch-shape invariants, checked without a GPU.
TEST(GemvPlan, SlicesCoverColumnsWithoutEmptyOnesAndFitSharedMemory) {
  for (ElementType type : kTypes) {
    for (bool pairs : {false, true})
      for (int64_t rows : {2, 14, 258, 2000, 22016})
        for (int64_t cols : {1, 8, 9, 1491, 4096, 11008, 32768})
          for (GemvConfig cfg : kConfigs) {
            const GemvPlan p = plan_gemv(rows, cols, pairs, cfg, 132, type);
            SCOPED_TRACE(type_name(type) + " rows " + std::to_string(rows) + " cols " +
                         std::to_string(cols) + " " + describe(cfg));
            const int64_t outputs = pairs ? rows / 2 : rows;
            EXPECT_GE(int64_t{p.tiles} * p.warps * (pairs ? 2 : 4), outputs);
            EXPECT_LT(int64_t{p.tiles - 1} * p.warps * (pairs ? 2 : 4), outputs);
            EXPECT_GE(int64_t{p.splits} * p.chunk_cols, cols);
            EXPECT_LT(int64_t{p.splits - 1} * p.chunk_cols, cols);
            EXPECT_LE(p.chunk_cols, 4096);
            EXPECT_EQ(p.chunk_cols % values_per_16_bytes(type), 0);
            // Never more slices than asked, unless the shared-memory cap forces them.
            if (cfg.splits > 0) {
              EXPECT_LE(p.splits, std::max<int64_t>(cfg.splits, (cols + 4095) / 4096));
            }
          }
  }
  // Few rows, many columns: the launcher splits so every SM gets work, in
  // slices of whole 512-byte warp steps.
  for (ElementType type : kTypes) {
    const GemvPlan narrow = plan_gemv(1024, 4096, false, {}, 132, type);
    EXPECT_GT(narrow.splits, 1);
    EXPECT_GE(narrow.tiles * narrow.splits, 132);
    EXPECT_EQ(narrow.chunk_cols * element_bytes(type) % 512, 0);
  }
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
