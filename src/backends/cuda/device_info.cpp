#include "backends/cuda/device_info.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {
namespace {

int attribute(cudaDeviceAttr what) {
  int device = 0, value = 0;
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

}  // namespace

std::string device_name() {
  int device = 0;
  cudaDeviceProp prop{};
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return std::string("cuda: ") + prop.name;
}

int sm_count() { return attribute(cudaDevAttrMultiProcessorCount); }

bool runs_wgmma() {
#ifdef FLASHSVD_SM90A
  return attribute(cudaDevAttrComputeCapabilityMajor) == 9 && attribute(cudaDevAttrComputeCapabilityMinor) == 0;
#else
  return false;
#endif
}

}  // namespace fsvd::cuda
