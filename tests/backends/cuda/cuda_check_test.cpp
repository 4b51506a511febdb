// FSVD_CUDA_CHECK turns failures into fsvd::Error naming the call, the site
// and the library's reason. Needs no GPU: only the status-to-text functions run.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/cuda_check.h"

#include <gtest/gtest.h>

#include <string>

namespace fsvd::cuda {
namespace {

std::string message_of(void (*call)()) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CudaCheck, NamesCallSiteAndReasonForRuntimeErrors) {
  const std::string m = message_of([] { FSVD_CUDA_CHECK(cudaErrorInvalidValue); });
  EXPECT_NE(m.find("cuda_check_test.cpp:"), std::string::npos) << m;
  EXPECT_NE(m.find("cudaErrorInvalidValue"), std::string::npos) << m;
  EXPECT_NE(m.find("invalid argument"), std::string::npos) << m;
}

TEST(CudaCheck, NamesCallAndReasonForCublasErrors) {
  const std::string m = message_of([] { FSVD_CUDA_CHECK(CUBLAS_STATUS_NOT_INITIALIZED); });
  EXPECT_NE(m.find("CUBLAS_STATUS_NOT_INITIALIZED failed"), std::string::npos) << m;
}

TEST(CudaCheck, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(FSVD_CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(FSVD_CUDA_CHECK(CUBLAS_STATUS_SUCCESS));
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
