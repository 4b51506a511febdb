// Times decode_attention (and argmax over a 128k vocab) on the GPU. Batch 1:
// LLaMA-7B heads (32/32, hd 128) and a GQA shape (32/8), bf16 and fp32
// caches, max_ctx 8192, one sequence over blocks in order (the executor's
// layout). Batches of 8, 32 and 64 sequences (LLaMA-7B heads, bf16), every
// row at the same length, their blocks of 16 shuffled over one pool. One
// graph of 8 layers' calls is replayed (8 separate pools so L2 does not
// serve the K/V). Prints us per call and the K/V read bandwidth.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/decode_attention.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/token_select.h"

using namespace fsvd::cuda;

namespace {

constexpr int kLayers = 8, kMaxCtx = 8192, kReps = 20, kBlock = 16;

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

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* d;
  FSVD_CUDA_CHECK(cudaMalloc(&d, host.size() * sizeof(T)));
  FSVD_CUDA_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

float* filled_floats(size_t n) {  // ~0.01 in either element type: finite, not zero
  float* d;
  FSVD_CUDA_CHECK(cudaMalloc(&d, n * 4));
  FSVD_CUDA_CHECK(cudaMemset(d, 0x3c, n * 4));
  return d;
}

// `batch` rows at position len - 1, each over its own max_ctx / 16 table
// entries: in order for one row, shuffled over a pool of batch * len rows
// otherwise. Prints one line.
void run(cudaStream_t s, ElementType type, HeadShape shape, int batch, int len) {
  const size_t kv_dim = size_t(shape.n_kv_heads) * shape.head_dim, q_dim = size_t(shape.n_heads) * shape.head_dim;
  const int max_blocks = kMaxCtx / kBlock, seq_blocks = (len + kBlock - 1) / kBlock;
  const int num_blocks = batch == 1 ? max_blocks : batch * seq_blocks;
  std::vector<int32_t> order(num_blocks), table(size_t(batch) * max_blocks, 0);
  std::iota(order.begin(), order.end(), 0);
  if (batch > 1) std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < seq_blocks; ++i) table[size_t(b) * max_blocks + i] = order[size_t(b) * seq_blocks + i];
  const size_t pool_bytes = size_t(num_blocks) * kBlock * kv_dim * element_bytes(type);
  std::vector<void*> k(kLayers), v(kLayers);
  for (int l = 0; l < kLayers; ++l) {
    FSVD_CUDA_CHECK(cudaMalloc(&k[l], pool_bytes));
    FSVD_CUDA_CHECK(cudaMalloc(&v[l], pool_bytes));
    FSVD_CUDA_CHECK(cudaMemset(k[l], 0x3c, pool_bytes));
    FSVD_CUDA_CHECK(cudaMemset(v[l], 0x3c, pool_bytes));
  }
  const DecodeAttentionPlan plan = plan_decode_attention(shape, kMaxCtx, batch);
  int32_t* d_table = device_copy(table);
  int* d_pos = device_copy(std::vector<int>(batch, len - 1));
  float *q = filled_floats(batch * q_dim), *kv_new = filled_floats(batch * kv_dim),  // k and v share one buffer
      *inv_freq = filled_floats(shape.head_dim / 2), *out = filled_floats(batch * q_dim);
  float* ws;
  FSVD_CUDA_CHECK(cudaMalloc(&ws, plan.workspace_floats * 4));
  FSVD_CUDA_CHECK(cudaMemset(ws, 0, plan.workspace_floats * 4));
  const PagedRows rows{d_pos, nullptr, d_table, max_blocks};
  const QkvRows qkv{q, kv_new, kv_new, int64_t(q_dim), int64_t(kv_dim), int64_t(kv_dim)};
  const float us = time_graph(s, [&] {
    for (int l = 0; l < kLayers; ++l)
      decode_attention(qkv, inv_freq, {k[l], v[l], kBlock, num_blocks, type}, rows, batch, kMaxCtx, shape, ws,
                       plan.workspace_floats, out, s);
  }, kLayers);
  const double bytes = 2.0 * batch * len * kv_dim * element_bytes(type);
  std::printf("%-5s %2d/%2d/%-8d %5d %6d %10.2f %10.0f   (splits %d)\n", type == ElementType::F32 ? "fp32" : "bf16",
              shape.n_heads, shape.n_kv_heads, shape.head_dim, batch, len, us, bytes / us * 1e-3, plan.splits);
  for (int l = 0; l < kLayers; ++l) cudaFree(k[l]), cudaFree(v[l]);
  cudaFree(d_table), cudaFree(d_pos), cudaFree(q), cudaFree(kv_new), cudaFree(inv_freq), cudaFree(out), cudaFree(ws);
}

}  // namespace

int main() {
  cudaStream_t s;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("%-5s %-14s %5s %6s %10s %10s\n", "cache", "heads/kv/hd", "batch", "len", "us/call", "KV GB/s");
  for (ElementType type : {ElementType::BF16, ElementType::F32})
    for (HeadShape shape : {HeadShape{32, 32, 128}, HeadShape{32, 8, 128}})
      for (int len : {512, 4096, 8192}) run(s, type, shape, 1, len);
  for (int batch : {8, 32, 64})
    for (int len : {512, 2048}) run(s, ElementType::BF16, HeadShape{32, 32, 128}, batch, len);

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
