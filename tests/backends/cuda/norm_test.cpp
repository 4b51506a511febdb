// The arguments rmsnorm refuses (its results: the op table, backends/op_table).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/norm.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/error.h"

namespace fsvd::cuda {
namespace {

TEST(CudaNormArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  EXPECT_THROW(rmsnorm(f, f, 0, 10, 1e-5f, f, ElementType::F32, nullptr), Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
