#include "apps/executor_choice.h"

#include <cstdio>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#ifdef FLASHSVD_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_executor.h"
#endif

namespace fsvd {
namespace {

bool gpu_present() {
#ifdef FLASHSVD_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

std::unique_ptr<Executor> make_cuda_executor([[maybe_unused]] const Model& model, [[maybe_unused]] int context) {
#ifdef FLASHSVD_CUDA
  check(gpu_present(), "--device", "cuda: no CUDA GPU found");
  return std::make_unique<cuda::CudaExecutor>(model, context);
#else
  fail("--device", "cuda: this flashsvd was built without CUDA");
#endif
}

}  // namespace

std::unique_ptr<Executor> make_executor(const Model& model, const std::string& device, int context, int threads) {
  if (device == "cpu") return std::make_unique<CpuExecutor>(model, context, threads);
  if (device == "cuda") return make_cuda_executor(model, context);
  check(device == "auto", "--device", "unknown device '", device, "' (expected auto, cpu or cuda)");
  if (gpu_present()) {
    try {
      auto executor = make_cuda_executor(model, context);
      std::fprintf(stderr, "device: cuda\n");
      return executor;
    } catch (const Error& e) {
      std::fprintf(stderr, "device: cpu (the GPU backend cannot run this model: %s)\n", e.what());
    }
  }
  return std::make_unique<CpuExecutor>(model, context, threads);
}

}  // namespace fsvd
