#pragma once
// Fills device memory with a synthetic model's values (model/synthetic.h) in
// place, so a 7B-shaped benchmark model needs no host copy of its weights.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// Rows [0, rows) of a row-major matrix with row stride ld get the values of
// elements [0, rows * cols) of synthetic tensor `tensor` (padding untouched).
void fill_synthetic(void* dst, ElementType type, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                    uint32_t tensor, float scale, cudaStream_t stream);
// A vector of n values (norm gains when around_one).
void fill_synthetic(float* dst, int64_t n, uint64_t seed, uint32_t tensor, float scale, bool around_one,
                    cudaStream_t stream);

}  // namespace fsvd::cuda
