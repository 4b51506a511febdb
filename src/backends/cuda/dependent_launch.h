#pragma once
// Launching a kernel as a programmatic dependent of the previous kernel in
// its stream (Hopper): it may start while that kernel still runs, so it must
// call wait_for_previous_kernel() (kernel_helpers.cuh) before it reads
// anything an earlier kernel writes or writes anything one reads. Short
// kernels between the decode step's weight streams launch so, calling
// allow_next_kernel_to_launch() first: the next product then requests its
// weights while they run. C++17 (included by .cu files).
#include <cuda_runtime.h>

#include <utility>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {

template <typename... Params, typename... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                      Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  FSVD_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace fsvd::cuda
