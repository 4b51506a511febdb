// What the op table (backends/op_table) does not check of the GEMVs: split-K
// results bitwise the same across launches and graph replays, early weights
// (PDL) waiting for the previous kernel's output, grouped launches giving
// what separate launches give, and the layouts refused.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemv.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "backends/cuda/gemv_test_util.h"
#include "backends/cuda/handles.h"
#include "backends/op_table/compare.h"
#include "backends/op_table/inputs.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

using optable::DeviceArray;
using optable::random_values;
using testutil::describe;
using testutil::kConfigs;
using testutil::kTypes;
using testutil::type_name;

// Random weights [rows, cols] of `type` on the device, rows padded (NaN) to
// the GEMV layout contract.
struct Weights {
  static int64_t stride(int64_t cols, ElementType type) {
    return (cols + values_per_16_bytes(type) - 1) / values_per_16_bytes(type) * values_per_16_bytes(type);
  }
  Weights(int64_t rows, int64_t cols, uint64_t seed, ElementType type)
      : data(optable::with_stride(random_values(rows * cols, seed), rows, cols, stride(cols, type)), type),
        m{data.data(), rows, cols, stride(cols, type), type} {}
  DeviceArray data;
  DeviceMatrix m;
};

DeviceBuffer<float> poisoned(int64_t n) { return optable::poisoned<float>(n); }

// Every value of both written, and within fp32 rounding of a product of
// `cols` terms computed by another launch shape.
::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, int64_t cols) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!std::isfinite(want[i])) return ::testing::AssertionFailure() << "reference element " << i << " is " << want[i];
  const std::string error =
      optable::compare({"y", want, optable::relative_l2(optable::sum_tolerance(cols), "another launch shape")}, got);
  return error.empty() ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << error;
}

class CudaGemv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// The tests that run a GEMV, for each weight type.
class CudaGemvTyped : public CudaGemv, public ::testing::WithParamInterface<ElementType> {};

// A graph of `work` captured on a new stream; check(stream, replay) runs it.
template <typename Work, typename Check>
void with_graph(Work work, Check check) {
  Stream stream;
  FSVD_CUDA_CHECK(cudaStreamCreate(stream.put()));
  Graph graph;
  GraphExec exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  work(stream.get());
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, graph.put()));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), graph, 0));
  check(stream.get(), [&] {
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
}

// `chain` (stream, early weights) launched with early weights on a stream and
// replayed from a graph, each time after `poison`; `check` judges each run.
template <typename Chain, typename Poison, typename Check>
void run_early_chain(Chain chain, Poison poison, Check check) {
  with_graph([&](cudaStream_t stream) { chain(stream, true); },
             [&](cudaStream_t stream, auto replay) {
               for (bool graphed : {false, true}) {
                 SCOPED_TRACE(graphed ? "graph replay" : "stream");
                 poison();
                 if (graphed) {
                   replay();
                 } else {
                   chain(stream, true);
                   FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
                 }
                 check();
               }
             });
}

// The split-K reduction adds the slices' partials in a fixed order, so
// repeated launches and graph replays give identical bits.
TEST_P(CudaGemvTyped, SplitKIsBitwiseReproducibleAcrossLaunchesAndGraphReplays) {
  const Weights w(1000, 4096, 300, GetParam());
  const DeviceArray x(random_values(4096, 301), ElementType::F32);
  const DeviceVec xv = DeviceVec::f32(static_cast<float*>(x.data()));
  DeviceBuffer<float> y = poisoned(1000);
  const GemvConfig cfg{8, 7};
  gemv(w.m, xv, y.data(), nullptr, cfg);
  const std::vector<float> first = y.download();
  ASSERT_TRUE(testutil::same_written_values(first, first));  // every value written
  with_graph([&](cudaStream_t stream) { gemv(w.m, xv, y.data(), stream, cfg); },
             [&](cudaStream_t, auto replay) {
               for (int i = 0; i < 3; ++i) {
                 optable::poison(y);
                 replay();
                 EXPECT_TRUE(testutil::same_written_values(y.download(), first)) << "replay " << i;
               }
             });
}

// With early_weights a GEMV starts before the previous kernel ends; it must
// still read that kernel's output only once it is complete. Outputs are
// poisoned before every run, so an early read shows as NaN; the chain
// without early weights is the reference.
TEST_P(CudaGemvTyped, EarlyWeightsStillWaitsForThePreviousKernelsOutput) {
  const ElementType type = GetParam();
  const Weights w1(1000, 11008, 400, type), w2(129, 1000, 401, type);
  const DeviceArray x(random_values(11008, 402), ElementType::F32);
  DeviceBuffer<float> t = poisoned(1000), y = poisoned(129);
  auto chain = [&](cudaStream_t stream, bool early) {
    gemv(w1.m, DeviceVec::f32(static_cast<float*>(x.data())), t.data(), stream, {0, 0, early});
    gemv(w2.m, DeviceVec::f32(t.data()), y.data(), stream, {0, 0, early});
  };
  chain(nullptr, false);
  const std::vector<float> t_want = t.download(), y_want = y.download();
  run_early_chain(chain, [&] { optable::poison(t), optable::poison(y); },
                  [&] {
                    EXPECT_TRUE(close(t.download(), t_want, 11008));
                    EXPECT_TRUE(close(y.download(), y_want, 1000));
                  });
}

// Products of a grouped launch: W_g [rows, cols] reading x_g, a slice of one
// packed vector (the rank-space vector of the q, k, v first factors).
struct TestGroups {
  std::vector<Weights> w;
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
  // The groups reading slices of x (packed fp32) and writing y.
  std::vector<GemvGroup> groups(const DeviceArray& x, std::vector<DeviceBuffer<float>>& y) const {
    std::vector<GemvGroup> g;
    for (int i = 0; i < count(); ++i)
      g.push_back({w[i].m, DeviceVec::f32(static_cast<float*>(x.data()) + offset[i]), y[i].data()});
    return g;
  }
  std::vector<DeviceBuffer<float>> outputs() const {
    std::vector<DeviceBuffer<float>> y;
    for (const Weights& m : w) y.push_back(poisoned(m.m.rows));
    return y;
  }
};

std::string describe(const std::vector<std::array<int64_t, 2>>& shapes) {
  std::string s;
  for (const auto& [rows, cols] : shapes) s += "[" + std::to_string(rows) + ", " + std::to_string(cols) + "] ";
  return s;
}

// One launch gives each product what its own gemv() gives: bitwise when the
// launch shape is the same (an explicit config, or one group), else within
// rounding. Covers unequal and odd ranks, products whose columns give fewer
// slices than the launch's cluster (idle CTAs), and products wider than one
// slice. (The op table checks the grouped launch against the CPU.)
TEST_P(CudaGemvTyped, GroupedGivesWhatSeparateLaunchesGive) {
  const ElementType type = GetParam();
  const std::vector<std::vector<std::array<int64_t, 2>>> sets = {
      {{129, 1491}},
      {{1000, 1024}, {7, 683}},
      {{1000, 1024}, {129, 683}, {1, 1491}},
      {{7, 8}, {1000, 4096}, {129, 1}},
      {{129, 11008}, {7, 1491}, {1000, 8}, {1, 4096}},
  };
  uint64_t seed = 500;
  for (const auto& shapes : sets) {
    const TestGroups set(shapes, seed += 10, type);
    const DeviceArray x(random_values(set.packed, ++seed), ElementType::F32);
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
          EXPECT_TRUE(same_shape ? testutil::same_written_values(out, ref) : close(out, ref, shapes[i][1]))
              << "group " << i;
        }
      }
    }
  }
}

// The decode chain: a GEMV writes the packed rank-space vector, the grouped
// launch with early_weights reads slices of it; every output is poisoned
// first, and the chain without early weights is the reference.
TEST_P(CudaGemvTyped, GroupedEarlyWeightsWaitsForThePreviousKernelsOutput) {
  const ElementType type = GetParam();
  const TestGroups set({{129, 1024}, {1000, 683}, {7, 293}}, 600, type);
  const Weights first(set.packed, 4096, 610, type);
  const DeviceArray x(random_values(4096, 611), ElementType::F32), packed(set.packed, ElementType::F32);
  std::vector<DeviceBuffer<float>> y = set.outputs();
  const std::vector<GemvGroup> groups = set.groups(packed, y);
  auto chain = [&](cudaStream_t stream, bool early) {
    gemv(first.m, DeviceVec::f32(static_cast<float*>(x.data())), static_cast<float*>(packed.data()), stream,
         {0, 0, early});
    gemv_grouped(groups.data(), set.count(), stream, {0, 0, early});
  };
  chain(nullptr, false);
  const std::vector<float> packed_want = packed.download();
  std::vector<std::vector<float>> y_want;
  for (const DeviceBuffer<float>& yi : y) y_want.push_back(yi.download());
  run_early_chain(
      chain,
      [&] {
        FSVD_CUDA_CHECK(cudaMemset(packed.data(), 0xff, set.packed * sizeof(float)));
        for (DeviceBuffer<float>& yi : y) optable::poison(yi);
      },
      [&] {
        EXPECT_TRUE(close(packed.download(), packed_want, 4096));
        for (int i = 0; i < set.count(); ++i)
          EXPECT_TRUE(close(y[i].download(), y_want[i], set.w[i].m.cols)) << "group " << i;
      });
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
