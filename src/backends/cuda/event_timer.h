#pragma once
// GPU time of enqueued work, between two events recorded around it: what
// Gemm times its algorithm candidates with, and the kernel benches too.
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/handles.h"

namespace fsvd::cuda {

// Milliseconds between events recorded on `stream` before and after what
// `work` enqueues there; returns once that work has finished.
template <typename F>
float elapsed_ms(cudaStream_t stream, F&& work) {
  Event start, stop;
  FSVD_CUDA_CHECK(cudaEventCreate(start.put()));
  FSVD_CUDA_CHECK(cudaEventCreate(stop.put()));
  FSVD_CUDA_CHECK(cudaEventRecord(start, stream));
  work();
  FSVD_CUDA_CHECK(cudaEventRecord(stop, stream));
  FSVD_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  FSVD_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

}  // namespace fsvd::cuda
