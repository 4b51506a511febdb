#include "backends/cuda/synthetic_weights.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "model/synthetic.h"

namespace fsvd::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* dst, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, uint32_t tensor,
                            float scale, bool around_one) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i - r * cols;
    dst[r * ld + c] = T(synthetic_value(seed, tensor, i, scale, around_one));
  }
}

template <typename T>
void launch(T* dst, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, uint32_t tensor, float scale,
            bool around_one, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((rows * cols + threads - 1) / threads, 65536);
  fill_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(dst, rows, cols, ld, seed, tensor, scale,
                                                                     around_one);
  FSVD_CUDA_CHECK_LAUNCH("fill_kernel");
}

}  // namespace

void fill_synthetic(void* dst, ElementType type, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                    uint32_t tensor, float scale, cudaStream_t stream) {
  if (type == ElementType::F32)
    launch(static_cast<float*>(dst), rows, cols, ld, seed, tensor, scale, false, stream);
  else
    launch(static_cast<__nv_bfloat16*>(dst), rows, cols, ld, seed, tensor, scale, false, stream);
}

void fill_synthetic(float* dst, int64_t n, uint64_t seed, uint32_t tensor, float scale, bool around_one,
                    cudaStream_t stream) {
  launch(dst, 1, n, n, seed, tensor, scale, around_one, stream);
}

}  // namespace fsvd::cuda
