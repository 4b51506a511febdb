// What the op table (backends/op_table) does not check of the GEMVs: split-K
// results bitwise the same across launches and graph replays, early weights
// (PDL) waiting for the previous kernel's output, grouped launches giving
// what separate launches give, and the layouts refused.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemv.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
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
  gemv(w.m, xv, {y.data()}, 1, nullptr, cfg);
  const std::vector<float> first = y.download();
  ASSERT_TRUE(testutil::same_written_values(first, first));  // every value written
  with_graph([&](cudaStream_t stream) { gemv(w.m, xv, {y.data()}, 1, stream, cfg); },
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
  for (int batch : {1, 8}) {  // batched: vectors [batch, 11008] -> [batch, 1000] -> [batch, 129]
    SCOPED_TRACE("batch " + std::to_string(batch));
    const DeviceArray x(random_values(batch * 11008, 402), ElementType::F32);
    DeviceBuffer<float> t = poisoned(batch * 1000), y = poisoned(batch * 129);
    auto chain = [&](cudaStream_t stream, bool early) {
      gemv(w1.m, DeviceVec::f32(static_cast<float*>(x.data()), 11008), {t.data(), 1000}, batch, stream,
           {0, 0, early});
      gemv(w2.m, DeviceVec::f32(t.data(), 1000), {y.data(), 129}, batch, stream, {0, 0, early});
    };
    chain(nullptr, false);
    const std::vector<float> t_want = t.download(), y_want = y.download();
    run_early_chain(chain, [&] { optable::poison(t), optable::poison(y); },
                    [&] {
                      EXPECT_TRUE(close(t.download(), t_want, 11008));
                      EXPECT_TRUE(close(y.download(), y_want, 1000));
                    });
  }
}

// Each vector of a batch gives bitwise what it gives alone under the same
// explicit launch shape (the same x values, slices and summation order: see
// gemv.h), for every input kind, epilogue and batch tile, vectors strided
// apart; the RMSNorm within rounding (its sum of squares is taken per window
// when batched), bitwise too when batch_invariant, which also plans every
// batch as one vector (the automatic shapes). Covers tiles with vectors left
// over (3, 5, 13), windows (4096 and 11008 columns at tiles 8 and 16) and
// idle slices.
TEST_P(CudaGemvTyped, BatchedVectorsGiveWhatEachGivesAlone) {
  const ElementType type = GetParam();
  enum class Kind { Plain, Residual, Silu, Norm };
  const std::array<int64_t, 2> shapes[] = {{1000, 4096}, {129, 11008}, {7, 1491}};
  const GemvConfig configs[] = {{8, 1},           {4, 7}, {3, 8}, {6, 3, false, 2}, {8, 2, true, 4},
                                {3, 8, false, 0, true}, {0, 0, false, 0, true}, {0, 0, true, 0, true}};
  uint64_t seed = 700;
  for (const auto& [rows, cols] : shapes) {
    const Weights w(rows, cols, ++seed, type);
    const int64_t ldx = cols + 4 - cols % 4 + 4, ldy = rows + 3;  // 16-byte aligned inputs, padding between
    const DeviceArray gain(random_values(cols, ++seed), ElementType::F32);
    for (int batch : {2, 3, 5, 8, 13, 16}) {
      // Vectors padded with NaN: a read past cols shows.
      auto vectors = [&](uint64_t s) {
        return DeviceArray(optable::with_stride(random_values(batch * cols, s), batch, cols, ldx), ElementType::F32);
      };
      const DeviceArray x = vectors(++seed), up = vectors(++seed),
                        start(random_values(batch * ldy, ++seed), ElementType::F32);
      const auto* xp = static_cast<const float*>(x.data());
      const auto* upp = static_cast<const float*>(up.data());
      for (Kind kind : {Kind::Plain, Kind::Residual, Kind::Silu, Kind::Norm})
        for (GemvConfig cfg : configs) {
          if (kind == Kind::Norm && cols > kMaxRmsnormGemvCols) continue;
          SCOPED_TRACE("[" + std::to_string(rows) + ", " + std::to_string(cols) + "] batch " +
                       std::to_string(batch) + " kind " + std::to_string(static_cast<int>(kind)) + " " +
                       describe(cfg));
          // Vectors [from, from + n) into y (row stride ldy).
          auto run = [&](int from, int n, DeviceBuffer<float>& y) {
            const DeviceOut out{y.data() + from * ldy, ldy};
            const DeviceVec in = kind == Kind::Silu ? DeviceVec::silu_mul(xp + from * ldx, upp + from * ldx, ldx)
                                                    : DeviceVec::f32(xp + from * ldx, ldx);
            if (kind == Kind::Norm)
              rmsnorm_gemv(w.m, in, static_cast<const float*>(gain.data()), 1e-5f, out, n, nullptr, cfg);
            else if (kind == Kind::Residual)
              gemv_residual(w.m, in, out, n, nullptr, cfg);
            else
              gemv(w.m, in, out, n, nullptr, cfg);
          };
          auto fresh = [&] {
            DeviceBuffer<float> y = poisoned(batch * ldy);
            if (kind == Kind::Residual)
              FSVD_CUDA_CHECK(cudaMemcpy(y.data(), start.data(), y.bytes(), cudaMemcpyDeviceToDevice));
            return y;
          };
          DeviceBuffer<float> together = fresh(), alone = fresh();
          run(0, batch, together);
          for (int b = 0; b < batch; ++b) run(b, 1, alone);
          const std::vector<float> got = together.download(), want = alone.download();
          // The vectors, and the padding between them (never written: as it was in both).
          std::vector<float> got_y, want_y;
          for (int b = 0; b < batch; ++b) {
            got_y.insert(got_y.end(), got.begin() + b * ldy, got.begin() + b * ldy + rows);
            want_y.insert(want_y.end(), want.begin() + b * ldy, want.begin() + b * ldy + rows);
            EXPECT_EQ(std::memcmp(got.data() + b * ldy + rows, want.data() + b * ldy + rows, 3 * sizeof(float)), 0)
                << "padding after vector " << b << " written";
          }
          EXPECT_TRUE(kind == Kind::Norm && !cfg.batch_invariant ? close(got_y, want_y, cols)
                                                                 : testutil::same_written_values(got_y, want_y));
        }
    }
  }
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
      g.push_back({w[i].m, DeviceVec::f32(static_cast<float*>(x.data()) + offset[i]), {y[i].data()}});
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
        gemv_grouped(groups.data(), set.count(), 1, nullptr, cfg);
        for (int i = 0; i < set.count(); ++i) gemv(groups[i].w, groups[i].x, {alone[i].data()}, 1, nullptr, cfg);
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
    gemv(first.m, DeviceVec::f32(static_cast<float*>(x.data())), {static_cast<float*>(packed.data())}, 1, stream,
         {0, 0, early});
    gemv_grouped(groups.data(), set.count(), 1, stream, {0, 0, early});
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
  expect_error([&] { gemv({base, 16, 12, 12}, xv, {y.data()}, 1, nullptr); }, "row stride 12");
  expect_error([&] { gemv({base, 16, 24, 16}, xv, {y.data()}, 1, nullptr); }, "row stride 16");
  expect_error([&] { gemv({base, 16, 10, 10, kF32}, xv, {y.data()}, 1, nullptr); }, "row stride 10");
  expect_error([&] { gemv({base, 16, 16, 12, kF32}, xv, {y.data()}, 1, nullptr); }, "row stride 12");
  expect_error([&] { gemv({base + 1, 16, 16, 16}, xv, {y.data()}, 1, nullptr); }, "16-byte aligned");
  expect_error([&] { gemv({base + 2, 8, 16, 16, kF32}, xv, {y.data()}, 1, nullptr); }, "16-byte aligned");
  expect_error([&] { gemv({base, 1, 40000, 40000, kF32}, xv, {y.data()}, 1, nullptr); }, "too large");
  expect_error([&] { gemv({base, 1, 40000, 40000}, xv, {y.data()}, 1, nullptr); }, "too large");
  expect_error([&] { gemv({base, 4, 16, 16}, DeviceVec::silu_mul(x.data(), nullptr), {y.data()}, 1, nullptr); },
               "silu_mul needs gate and up");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, DeviceVec::f32(x.data()), nullptr, 1e-5f, {y.data()}, 1, nullptr); },
               "gain");
  expect_error([&] { rmsnorm_gemv({base, 1, 8200, 8200}, DeviceVec::f32(x.data()), x.data(), 1e-5f, {y.data()}, 1, nullptr); },
               "at most 8192");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, DeviceVec::f32(x.data() + 1), x.data(), 1e-5f, {y.data()}, 1, nullptr); },
               "16-byte aligned");
  expect_error([&] { rmsnorm_gemv({base, 4, 16, 16}, DeviceVec::f32(x.data()), x.data() + 2, 1e-5f, {y.data()}, 1, nullptr); },
               "16-byte aligned");
  // Batches: 1..16 vectors, strided at least a vector apart, inputs 16-byte aligned.
  expect_error([&] { gemv({base, 4, 16, 16}, xv, {y.data()}, 0, nullptr); }, "batch of 0");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, {y.data(), 4}, 17, nullptr); }, "batch of 17");
  expect_error([&] { gemv({base, 4, 16, 16}, DeviceVec::f32(x.data(), 12), {y.data(), 4}, 2, nullptr); },
               "input stride 12");
  expect_error([&] { gemv({base, 4, 16, 16}, DeviceVec::f32(x.data(), 16), {y.data(), 3}, 2, nullptr); },
               "output stride 3");
  expect_error([&] { gemv({base, 4, 16, 16}, DeviceVec::f32(x.data(), 18), {y.data(), 4}, 2, nullptr); },
               "16-byte aligned");
  expect_error([&] { gemv({base, 4, 16, 16}, DeviceVec::f32(x.data() + 1, 16), {y.data(), 4}, 2, nullptr); },
               "16-byte aligned");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, {y.data()}, 1, nullptr, {9, 0}); }, "warps");
  expect_error([&] { gemv({base, 4, 16, 16}, xv, {y.data()}, 1, nullptr, {0, 9}); }, "splits");
}

TEST_F(CudaGemv, GroupedRejectsBadGroupLists) {
  DeviceBuffer<uint16_t> buf(64 * 16);
  DeviceBuffer<float> x(64), y(64);
  const auto* base = reinterpret_cast<const __nv_bfloat16*>(buf.data());
  const DeviceVec xv = DeviceVec::f32(x.data());
  const DeviceMatrix ok{base, 4, 16, 16};
  const GemvGroup good{ok, xv, {y.data()}};
  auto grouped = [&](std::vector<GemvGroup> g, GemvConfig cfg = {}) {
    return [g, cfg] { gemv_grouped(g.data(), static_cast<int>(g.size()), 1, nullptr, cfg); };
  };
  expect_error([&] { gemv_grouped(nullptr, 1, 1, nullptr); }, "null group list");
  expect_error(grouped({}), "0 groups");
  expect_error(grouped({good, good, good, good, good}), "5 groups");
  expect_error(grouped({good, {{base, 4, 16, 16, ElementType::F32}, xv, {y.data()}}}), "another type");
  const DeviceVec silu = DeviceVec::silu_mul(x.data(), x.data());
  expect_error(grouped({good, {ok, silu, {y.data()}}}), "one kind");
  expect_error(grouped({{ok, silu, {y.data()}}, {ok, silu, {y.data()}}}), "for single GEMVs");
  expect_error(grouped({good, {{base, 4, 16, 12}, xv, {y.data()}}}), "group 1: row stride 12");
  expect_error(grouped({good, good, {ok, xv, {}}}), "group 2: null output");
  expect_error(grouped({good, {ok, DeviceVec::f32(nullptr), {y.data()}}}), "group 1: null input");
  expect_error(grouped({{{base + 1, 4, 16, 16}, xv, {y.data()}}, good}), "16-byte aligned");
  expect_error(grouped({good, good}, {9, 0}), "warps");
  expect_error([&] { plan_gemv_grouped(&good, 0, 1, {}, 132); }, "0 groups");
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
