// Times decode_attention (and argmax over a 128k vocab) on the GPU: LLaMA-7B
// heads (32/32, hd 128) and a GQA shape (32/8), bf16 and fp32 caches, max_ctx
// 8192, one graph of 8 layers' calls replayed (8 separate caches so L2 does
// not serve the K/V). Prints us per call and the K/V read bandwidth.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/decode_attention.h"
#include "backends/cuda/token_select.h"

using namespace fsvd::cuda;

namespace {

constexpr int kLayers = 8, kMaxCtx = 8192, kReps = 20;

// Median us per replay of `graph_body` captured once.
template <typename F>
float time_graph(cudaStream_t s, F graph_body, int calls) {
  cudaGraph_t g;
  cudaGraphExec_t e;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  graph_body();
  FSVD_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
  std::vector<float> ms;
  for (int r = 0; r < kReps + 3; ++r) {
    const float t = elapsed_ms(s, [&] { FSVD_CUDA_CHECK(cudaGraphLaunch(e, s)); });
    if (r >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(e));
  FSVD_CUDA_CHECK(cudaGraphDestroy(g));
  return ms[ms.size() / 2] * 1000.0f / calls;
}

}  // namespace

int main() {
  cudaStream_t s;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* pos;
  FSVD_CUDA_CHECK(cudaMalloc(&pos, sizeof(int)));
  std::printf("%-5s %-14s %6s %10s %10s\n", "cache", "heads/kv/hd", "len", "us/call", "KV GB/s");
  for (ElementType type : {ElementType::BF16, ElementType::F32}) {
    for (HeadShape shape : {HeadShape{32, 32, 128}, HeadShape{32, 8, 128}}) {
      const size_t kv_dim = size_t(shape.n_kv_heads) * shape.head_dim;
      const size_t cache_bytes = kv_dim * kMaxCtx * element_bytes(type);
      std::vector<void*> k(kLayers), v(kLayers);
      for (int l = 0; l < kLayers; ++l) {
        FSVD_CUDA_CHECK(cudaMalloc(&k[l], cache_bytes));
        FSVD_CUDA_CHECK(cudaMalloc(&v[l], cache_bytes));
        FSVD_CUDA_CHECK(cudaMemset(k[l], 0x3c, cache_bytes));  // ~0.01 in either type: finite, not zero
        FSVD_CUDA_CHECK(cudaMemset(v[l], 0x3c, cache_bytes));
      }
      const DecodeAttentionPlan plan = plan_decode_attention(shape, kMaxCtx);
      float *q, *kv_new, *inv_freq, *out, *ws;  // the token's k and v share one buffer here
      FSVD_CUDA_CHECK(cudaMalloc(&q, shape.n_heads * shape.head_dim * 4));
      FSVD_CUDA_CHECK(cudaMalloc(&kv_new, kv_dim * 4));
      FSVD_CUDA_CHECK(cudaMalloc(&inv_freq, shape.head_dim / 2 * 4));
      FSVD_CUDA_CHECK(cudaMemset(kv_new, 0x3c, kv_dim * 4));
      FSVD_CUDA_CHECK(cudaMemset(inv_freq, 0x3c, shape.head_dim / 2 * 4));
      FSVD_CUDA_CHECK(cudaMalloc(&out, shape.n_heads * shape.head_dim * 4));
      FSVD_CUDA_CHECK(cudaMalloc(&ws, plan.workspace_floats * 4));
      FSVD_CUDA_CHECK(cudaMemset(ws, 0, plan.workspace_floats * 4));
      FSVD_CUDA_CHECK(cudaMemset(q, 0x3c, shape.n_heads * shape.head_dim * 4));
      for (int len : {512, 4096, 8192}) {
        const int p = len - 1;
        FSVD_CUDA_CHECK(cudaMemcpy(pos, &p, sizeof(int), cudaMemcpyHostToDevice));
        const float us = time_graph(s, [&] {
          for (int l = 0; l < kLayers; ++l)
            decode_attention(q, kv_new, kv_new, inv_freq, {k[l], v[l], kMaxCtx, type}, pos, shape, ws,
                             plan.workspace_floats, out, s);
        }, kLayers);
        const double bytes = 2.0 * len * kv_dim * element_bytes(type);
        std::printf("%-5s %2d/%2d/%-8d %6d %10.2f %10.0f   (splits %d)\n",
                    type == ElementType::F32 ? "fp32" : "bf16", shape.n_heads, shape.n_kv_heads,
                    shape.head_dim, len, us, bytes / us * 1e-3, plan.splits);
      }
      for (int l = 0; l < kLayers; ++l) cudaFree(k[l]), cudaFree(v[l]);
      cudaFree(q), cudaFree(kv_new), cudaFree(inv_freq), cudaFree(out), cudaFree(ws);
    }
  }
  float* logits;
  int32_t* idx;
  const int vocab = 128256;
  FSVD_CUDA_CHECK(cudaMalloc(&logits, vocab * 4));
  FSVD_CUDA_CHECK(cudaMalloc(&idx, 4));
  FSVD_CUDA_CHECK(cudaMemset(logits, 0x3c, vocab * 4));
  const float us = time_graph(s, [&] { for (int i = 0; i < 8; ++i) argmax(logits, vocab, idx, s); }, 8);
  std::printf("argmax over %d logits: %.2f us/call\n", vocab, us);
  FSVD_CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}
