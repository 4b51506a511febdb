// What the op table (backends/op_table) does not check of argmax and
// publish_token: argmax on NaN and infinities, and the arguments both refuse.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/token_select.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

TEST(CudaTokenSelect, ArgmaxSkipsNaNAndHandlesInfinities) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<std::vector<float>> cases = {
      {nan, 1.0f, 2.0f, nan, 2.0f}, {-inf, -inf, -inf}, {nan, -inf, nan}, {1.0f, inf, 3.0f, inf}};
  const int32_t expected[] = {2, 0, 1, 1};
  DeviceBuffer<int32_t> index(1);
  for (size_t c = 0; c < cases.size(); ++c) {
    DeviceBuffer<float> dv(cases[c].size());
    dv.upload(cases[c]);
    argmax(dv.data(), cases[c].size(), index.data(), nullptr);
    EXPECT_EQ(index.download()[0], expected[c]) << "case " << c;
  }
}

TEST(CudaTokenSelectArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  EXPECT_THROW(argmax(f, 0, i, nullptr), Error);
  EXPECT_THROW(argmax(nullptr, 10, i, nullptr), Error);
  EXPECT_THROW(publish_token(i, i, i, 1, nullptr), Error);  // a ring of one slot
  EXPECT_THROW(publish_token(nullptr, i, i, 3, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
