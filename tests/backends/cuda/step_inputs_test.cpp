// StepInputs puts every row's parameters, token and position on the device
// with each copy, and a block table only after it changed: a table left as
// it was is not copied again (shown by overwriting the device's copy).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/step_inputs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

template <typename T>
std::vector<T> read(const T* device, size_t count) {
  std::vector<T> host(count);
  EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST(CudaStepInputs, CopiesRowsAndOnlyChangedTables) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  const int rows = 3, max_blocks = 5;
  StepInputs in(rows, max_blocks);
  EXPECT_EQ(read(in.device_pos(), rows), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(read(in.device_tables(), rows * max_blocks), std::vector<int32_t>(rows * max_blocks, 0));

  in.token(0) = 7, in.token(2) = 9;
  in.pos(0) = 11, in.pos(2) = 4;
  in.params(1).temperature = 0.5f, in.params(1).seed = 1ull << 40;
  const std::vector<int32_t> long_table = {3, 1, 4, 1, 5, 9, 2};  // past max_blocks: cut
  in.set_table(0, long_table);
  in.set_table(2, std::vector<int32_t>{8, 6});
  in.upload(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read(in.device_tokens(), rows), (std::vector<int32_t>{7, 0, 9}));
  EXPECT_EQ(read(in.device_pos(), rows), (std::vector<int>{11, -1, 4}));
  const std::vector<SamplingParams> params = read(in.device_params(), rows);
  EXPECT_EQ(params[1].temperature, 0.5f);
  EXPECT_EQ(params[1].seed, 1ull << 40);
  EXPECT_EQ(params[0], SamplingParams{});
  EXPECT_EQ(read(in.device_tables(), rows * max_blocks),
            (std::vector<int32_t>{3, 1, 4, 1, 5, 0, 0, 0, 0, 0, 8, 6, 0, 0, 0}));

  // The same tables again: not copied (the poison stays); the positions are.
  ASSERT_EQ(cudaMemset(in.device_tables(), 0xff, rows * max_blocks * sizeof(int32_t)), cudaSuccess);
  in.set_table(0, long_table);
  in.set_table(2, std::vector<int32_t>{8, 6});
  in.pos(1) = 30;
  in.upload(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read(in.device_pos(), rows), (std::vector<int>{11, 30, 4}));
  EXPECT_EQ(read(in.device_tables(), rows * max_blocks), std::vector<int32_t>(rows * max_blocks, -1));

  // A changed table goes up with the rows before it.
  in.set_table(1, std::vector<int32_t>{2});
  in.upload(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read(in.device_tables(), rows * max_blocks),
            (std::vector<int32_t>{3, 1, 4, 1, 5, 2, 0, 0, 0, 0, -1, -1, -1, -1, -1}));
}

TEST(CudaStepInputs, RejectsEmptyShapes) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  EXPECT_THROW(StepInputs(0, 4), Error);
  EXPECT_THROW(StepInputs(2, 0), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
