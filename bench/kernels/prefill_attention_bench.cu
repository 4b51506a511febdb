// Times prefill_attention and rope_store_kv_rows on the GPU: LLaMA-7B heads
// (32/32, hd 128), Llama-3-8B heads (32/8, hd 128) and the same two at
// head_dim 64; n = 512, 1024, 2048, 8192 at pos 0, and a second chunk of 2048 at
// pos 6144. Median of 20 timed calls after 3 warm-ups, on random data.
// TFLOP/s counts causal FLOPs, 4 * head_dim * heads * (n * pos + n^2 / 2)
// (pos 0: FlashAttention's 4 n^2 hd heads / 2), as the SDPA peer script does.
// With arguments `heads kv_heads head_dim pos n` it times that one case (for
// a profiler run).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/flash_attention.h"
#include "backends/cuda/identity_pages.h"
#include "backends/cuda/kv_store.h"

using namespace fsvd::cuda;

namespace {

constexpr int kWarmup = 3, kReps = 20;

// Uniform values in [-1, 1) from a hash of the index: never zeros.
template <typename T>
__global__ void fill_random(T* x, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = static_cast<T>(static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f);
  }
}

template <typename T>
T* device_random(size_t n, uint32_t seed) {
  T* p;
  FSVD_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  fill_random<<<1024, 256>>>(p, n, seed);
  FSVD_CUDA_CHECK_LAUNCH("fill_random");
  return p;
}

// Median ms of one call of f on stream s.
template <typename F>
float time_ms(cudaStream_t s, F f) {
  for (int r = 0; r < kWarmup; ++r) f();
  std::vector<float> ms;
  for (int r = 0; r < kReps; ++r) ms.push_back(elapsed_ms(s, f));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

size_t count_non_finite(const __nv_bfloat16* d, size_t n) {
  std::vector<uint16_t> h(n);
  FSVD_CUDA_CHECK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
  return std::count_if(h.begin(), h.end(), [](uint16_t b) { return (b & 0x7f80) == 0x7f80; });
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<HeadShape> shapes = {{32, 32, 128}, {32, 8, 128}, {32, 32, 64}, {32, 8, 64}};
  std::vector<std::pair<int, int>> cases = {
      {0, 512}, {0, 1024}, {0, 2048}, {0, 8192}, {6144, 2048}};  // (pos, n)
  if (argc == 6) {
    shapes = {{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])}};
    cases = {{std::atoi(argv[4]), std::atoi(argv[5])}};
  }
  cudaStream_t s;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("%-12s %5s %5s %10s %9s %9s %10s %9s\n", "heads/kv/hd", "pos", "n", "attn ms",
              "TFLOP/s", "bad out", "rope ms", "GB/s");
  uint32_t seed = 1;
  for (const HeadShape& shape : shapes) {
    for (const auto& c : cases) {
      const int pos = c.first, n = c.second;
      const IdentityPages pages(pos + n);  // one sequence over blocks in order: the dense layout
      const size_t max_ctx = size_t(pages.num_blocks()) * pages.block_size();
      const size_t q_dim = size_t(shape.n_heads) * shape.head_dim;
      const size_t kv_dim = size_t(shape.n_kv_heads) * shape.head_dim;
      const size_t ld = q_dim + 2 * kv_dim;  // one packed q/k/v GEMM output
      auto* kc = device_random<__nv_bfloat16>(max_ctx * kv_dim, ++seed);
      auto* vc = device_random<__nv_bfloat16>(max_ctx * kv_dim, ++seed);
      auto* q = device_random<__nv_bfloat16>(n * q_dim, ++seed);
      auto* qkv = device_random<float>(n * ld, ++seed);
      std::vector<float> inv(shape.head_dim / 2);
      for (int j = 0; j < shape.head_dim / 2; ++j)
        inv[j] = std::pow(10000.0f, -2.0f * j / shape.head_dim);
      float* dinv;
      FSVD_CUDA_CHECK(cudaMalloc(&dinv, inv.size() * 4));
      FSVD_CUDA_CHECK(cudaMemcpy(dinv, inv.data(), inv.size() * 4, cudaMemcpyHostToDevice));
      __nv_bfloat16 *out, *q_rot;
      FSVD_CUDA_CHECK(cudaMalloc(&out, n * q_dim * 2));
      FSVD_CUDA_CHECK(cudaMalloc(&q_rot, n * q_dim * 2));
      FSVD_CUDA_CHECK(cudaMemset(out, 0xff, n * q_dim * 2));
      const KvCacheLayer cache = pages.pool(kc, vc, ElementType::BF16);

      const float attn = time_ms(s, [&] { prefill_attention(q, cache, nullptr, pos, n, shape, out, s); });
      const size_t bad = count_non_finite(out, n * q_dim);
      // Rows [pos, pos + n) are overwritten with rotated copies of random data: still random.
      const float rope = time_ms(s, [&] {
        rope_store_kv_rows({qkv, qkv + q_dim, qkv + q_dim + kv_dim, int64_t(ld), int64_t(ld), int64_t(ld)}, dinv,
                           pages.chunk(pos), n, shape, cache, q_rot, s);
      });
      const double flops =
          4.0 * shape.head_dim * shape.n_heads * (double(n) * pos + 0.5 * double(n) * n);
      const double bytes = double(n) * ld * (4 + 2);  // fp32 in, bf16 out
      std::printf("%3d/%3d/%3d  %5d %5d %10.4f %9.1f %9zu %10.4f %9.0f\n", shape.n_heads,
                  shape.n_kv_heads, shape.head_dim, pos, n, attn, flops / (attn * 1e9), bad, rope,
                  bytes / (rope * 1e6));
      for (void* p : {static_cast<void*>(kc), static_cast<void*>(vc), static_cast<void*>(q),
                      static_cast<void*>(qkv), static_cast<void*>(dinv), static_cast<void*>(out),
                      static_cast<void*>(q_rot)})
        FSVD_CUDA_CHECK(cudaFree(p));
    }
  }
  FSVD_CUDA_CHECK(cudaStreamDestroy(s));
  return 0;
}
