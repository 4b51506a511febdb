#pragma once
// Turns CUDA runtime and cuBLAS status codes into fsvd::Error naming the call,
// its source location and the library's own description of the failure.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace fsvd::cuda {

inline std::string call_site(const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line);
}

inline void check_status(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail(call_site(file, line), call, " failed: ", cudaGetErrorName(status), " (",
         cudaGetErrorString(status), ")");
}

inline void check_status(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(call_site(file, line), call, " failed: ", cublasGetStatusName(status), " (",
         cublasGetStatusString(status), ")");
}

}  // namespace fsvd::cuda

// FSVD_CUDA_CHECK(cudaMalloc(&p, n)); works for cudaError_t and cublasStatus_t.
#define FSVD_CUDA_CHECK(call) ::fsvd::cuda::check_status((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration at the launch site
// (errors inside the kernel surface at the next synchronizing call).
#define FSVD_CUDA_CHECK_LAUNCH(kernel_name) \
  ::fsvd::cuda::check_status(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
