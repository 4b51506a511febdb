// What the op table (backends/op_table) does not check of the prefill GEMM:
// a first call enqueued during graph capture, and row_slice (host only).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemm.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "backends/cuda/handles.h"
#include "backends/op_table/compare.h"
#include "backends/op_table/inputs.h"
#include "testing/fails_with.h"

namespace fsvd::cuda {
namespace {

TEST(CudaGemm, RowSliceIsTheRowsInPlace) {
  const DeviceMatrix w{reinterpret_cast<const void*>(uintptr_t{4096}), 10, 5, 8, ElementType::BF16};
  const DeviceMatrix half = row_slice(w, 4, 10);
  EXPECT_EQ(half.data, static_cast<const uint8_t*>(w.data) + 4 * 8 * 2);
  EXPECT_EQ(half.rows, 6);
  EXPECT_EQ(half.cols, 5);
  EXPECT_EQ(half.ld, 8);
  EXPECT_TRUE(test::fails_with([&] { row_slice(DeviceMatrix{nullptr, 4, 4, 8, ElementType::BF16}, 3, 5); },
                               "rows [3, 5)"));
}

// A first call enqueued while its stream is captured into a graph (the
// low-rank KV cache's rebuild in the decode step) cannot time algorithms,
// which needs synchronization: it takes the heuristic's choice, and the
// replayed graph computes the product a call outside capture (which times
// them) computes, within fp32 rounding.
TEST(CudaGemm, FirstCallDuringGraphCaptureIsCapturedNotTimed) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  const int64_t out = 40, in = 64, n = Gemm::kTuneMinRows + 3;
  const optable::DeviceArray w(optable::random_values(out * in, 7), ElementType::BF16),
      x(optable::random_values(n * in, 8), ElementType::BF16), captured(n * out, ElementType::F32),
      direct(n * out, ElementType::F32);
  const DeviceMatrix wm{w.data(), out, in, in, ElementType::BF16};
  Stream stream;
  FSVD_CUDA_CHECK(cudaStreamCreate(stream.put()));
  Gemm gemm(stream);
  Graph graph;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  gemm.run(wm, x.data(), in, n, captured.data(), out, ElementType::F32);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, graph.put()));
  GraphExec exec;
  FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), graph, 0));
  FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  Gemm timed(stream);
  timed.run(wm, x.data(), in, n, direct.data(), out, ElementType::F32);
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> want = direct.download();
  ASSERT_TRUE(testutil::same_written_values(want, want));  // every value written
  const std::string error = optable::compare(
      {"y", want, optable::relative_l2(optable::sum_tolerance(in), "another algorithm's order of sums")},
      captured.download());
  EXPECT_TRUE(error.empty()) << error;
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
