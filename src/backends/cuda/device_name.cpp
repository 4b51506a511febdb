#include "backends/cuda/device_name.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {

std::string device_name() {
  int device = 0;
  cudaDeviceProp prop{};
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return std::string("cuda: ") + prop.name;
}

}  // namespace fsvd::cuda
