// The prefill GEMM against a double-precision CPU product: both element
// types, accumulation into the output, padded row strides, row slices, and
// a chunk long enough for the algorithm choice by timing.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemm.h"

#include <gtest/gtest.h>

#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "core/dtype.h"
#include "testing/fails_with.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

TEST(CudaGemm, MatchesCpuProduct) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream = nullptr;
  Gemm gemm(stream);
  struct Case {
    int64_t out, in, n;
  };
  // The last case has enough rows to time the algorithms on first use
  // (Gemm::kTuneMinRows): accumulating still adds the product to y once.
  static_assert(Gemm::kTuneMinRows <= 1100);
  for (const Case& k : {Case{1, 1, 1}, Case{37, 91, 5}, Case{300, 129, 64}, Case{64, 1491, 17}, Case{72, 96, 1100}}) {
    for (ElementType type : {ElementType::BF16, ElementType::F32}) {
      const int64_t ldw = (k.in + 7) / 8 * 8, ldx = ldw + 8, ldy = k.out + 3;
      std::vector<float> w = testing::random_normal(k.out * ldw, 1), x = testing::random_normal(k.n * ldx, 2);
      const std::vector<float> y0 = testing::random_normal(k.n * ldy, 3);
      // Device copies in `type`; the CPU uses the values the device sees.
      auto device_copy = [&](std::vector<float>& v) {
        if (type == ElementType::F32) {
          DeviceBuffer<uint8_t> d(v.size() * 4);
          FSVD_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
          return d;
        }
        const std::vector<uint16_t> bits = testutil::round_to_bf16(v);
        DeviceBuffer<uint8_t> d(v.size() * 2);
        FSVD_CUDA_CHECK(cudaMemcpy(d.data(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
        return d;
      };
      const DeviceBuffer<uint8_t> dw = device_copy(w), dx = device_copy(x);
      DeviceBuffer<float> dy(y0.size());
      dy.upload(y0);
      const DeviceMatrix wm{dw.data(), k.out, k.in, ldw, type};
      for (bool accumulate : {false, true}) {
        dy.upload(y0);
        gemm.run(wm, dx.data(), ldx, k.n, dy.data(), ldy, ElementType::F32, accumulate);
        std::vector<float> want = y0;
        for (int64_t r = 0; r < k.n; ++r)
          for (int64_t o = 0; o < k.out; ++o) {
            double acc = accumulate ? y0[r * ldy + o] : 0.0;
            for (int64_t i = 0; i < k.in; ++i) acc += double{w[o * ldw + i]} * x[r * ldx + i];
            want[r * ldy + o] = static_cast<float>(acc);
          }
        // Only the written columns may change; padding keeps y0.
        const double tol = type == ElementType::F32 ? 1e-5 : 1e-5;  // inputs already bf16-exact
        EXPECT_LT(testutil::relative_error(dy.download(), want), tol)
            << k.out << "x" << k.in << " n " << k.n << (accumulate ? " accumulate" : "");
      }
      // A row slice is the same product over those rows.
      const DeviceMatrix half = row_slice(wm, k.out / 2, k.out);
      EXPECT_EQ(half.rows, k.out - k.out / 2);
    }
  }
  EXPECT_TRUE(test::fails_with([&] { row_slice(DeviceMatrix{nullptr, 4, 4, 8, ElementType::BF16}, 3, 5); },
                               "rows [3, 5)"));
}

// A first call enqueued while its stream is captured into a graph (the
// low-rank KV cache's rebuild in the decode step) cannot time algorithms,
// which needs synchronization: it takes the heuristic's choice, and the
// replayed graph computes the product.
TEST(CudaGemm, FirstCallDuringGraphCaptureIsCapturedNotTimed) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  const int64_t out = 40, in = 64, n = Gemm::kTuneMinRows + 3;
  std::vector<float> w = testing::random_normal(out * in, 7), x = testing::random_normal(n * in, 8);
  const std::vector<uint16_t> w_bits = testutil::round_to_bf16(w), x_bits = testutil::round_to_bf16(x);
  DeviceBuffer<uint16_t> dw(w_bits.size()), dx(x_bits.size());
  dw.upload(w_bits), dx.upload(x_bits);
  DeviceBuffer<float> dy(n * out);
  cudaStream_t stream = nullptr;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    Gemm gemm(stream);
    cudaGraph_t graph = nullptr;
    FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    gemm.run(DeviceMatrix{dw.data(), out, in, in, ElementType::BF16}, dx.data(), in, n, dy.data(), out,
             ElementType::F32);
    FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
  std::vector<float> want(n * out);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < in; ++i) acc += double{w[o * in + i]} * x[r * in + i];
      want[r * out + o] = static_cast<float>(acc);
    }
  EXPECT_LT(testutil::relative_error(dy.download(), want), 1e-5);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
