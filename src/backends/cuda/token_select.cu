// Greedy argmax and the token hand-off (see token_select.h). argmax over a
// 256k vocab reads 1 MB, so it favours one simple launch over peak bandwidth.
#include "backends/cuda/token_select.h"

#include <climits>
#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/reduce.cuh"

namespace fsvd::cuda {
namespace {

constexpr int kArgmaxThreads = 1024;

__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* logits, int n, int32_t* index) {
  __shared__ Best partial[kArgmaxThreads / 32];
  const Best best = block_best<kArgmaxThreads / 32>(range_best<kArgmaxThreads>(logits, n, 0), partial);
  if (threadIdx.x == 0) *index = best.i == INT_MAX ? 0 : best.i;
}

__global__ void publish_token_kernel(const int32_t* token, int32_t* pos, int32_t* ring, int ring_size) {
  const int32_t p = *pos;
  // A non-negative slot even for a (never valid) negative position: no write outside the ring.
  ring[(p % ring_size + ring_size) % ring_size] = *token;
  *pos = p + 1;
}

}  // namespace

void argmax(const float* logits, int64_t n, int32_t* d_index, cudaStream_t stream) {
  const char* where = "argmax";
  check(logits != nullptr && d_index != nullptr, where, "null argument");
  check(reinterpret_cast<uintptr_t>(logits) % alignof(float) == 0, where, "misaligned logits");
  check(n >= 1 && n < INT32_MAX, where, n, " logits");
  argmax_kernel<<<1, kArgmaxThreads, 0, stream>>>(logits, static_cast<int>(n), d_index);
  FSVD_CUDA_CHECK_LAUNCH("argmax_kernel");
}

void publish_token(const int32_t* d_token, int32_t* d_pos, int32_t* ring, int ring_size, cudaStream_t stream) {
  const char* where = "publish_token";
  check(d_token != nullptr && d_pos != nullptr && ring != nullptr, where, "null argument");
  check(ring_size >= 2, where, "ring of ", ring_size, " slots (at least 2)");
  publish_token_kernel<<<1, 1, 0, stream>>>(d_token, d_pos, ring, ring_size);
  FSVD_CUDA_CHECK_LAUNCH("publish_token_kernel");
}

}  // namespace fsvd::cuda
