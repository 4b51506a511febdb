// The embedding gather (see embedding.h). It moves a few KB a token, so it
// favours one simple launch over peak bandwidth.
#include "backends/cuda/embedding.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_helpers.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    embedding_kernel(const T* table, int64_t vocab, int64_t hidden, int64_t ld, const int32_t* tokens,
                     float* x) {
  // One grid row (blockIdx.y) per token.
  const int32_t t = tokens[blockIdx.y];
  x += blockIdx.y * hidden;
  const bool ok = t >= 0 && t < vocab;
  const T* row = table + (ok ? t : 0) * ld;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < hidden;
       i += int64_t{gridDim.x} * blockDim.x)
    x[i] = ok ? to_float(row[i]) : nanf("");
}

}  // namespace

void embedding_lookup(const DeviceMatrix& table, const int32_t* d_tokens, int64_t n, float* x,
                      cudaStream_t stream) {
  const char* where = "embedding_lookup";
  check(table.data != nullptr && d_tokens != nullptr && x != nullptr, where, "null argument");
  check(n >= 1 && n <= 65535, where, n, " tokens (1..65535)");
  check(table.rows >= 1 && table.rows <= INT32_MAX && table.cols >= 1 && table.ld >= table.cols,
        where, "table of [", table.rows, ", ", table.cols, "] with row stride ", table.ld);
  check(reinterpret_cast<uintptr_t>(table.data) % element_bytes(table.type) == 0, where,
        "misaligned table");
  const dim3 blocks(static_cast<unsigned>(std::min<int64_t>((table.cols + kThreads - 1) / kThreads, 1024)),
                    static_cast<unsigned>(n));
  if (table.type == ElementType::F32)
    embedding_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(table.data), table.rows,
                                                      table.cols, table.ld, d_tokens, x);
  else
    embedding_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(table.data),
                                                      table.rows, table.cols, table.ld, d_tokens, x);
  FSVD_CUDA_CHECK_LAUNCH("embedding_kernel");
}

}  // namespace fsvd::cuda
