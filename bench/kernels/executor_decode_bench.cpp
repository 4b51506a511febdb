// Decode-step time of CudaExecutor on random models of real shapes, eager
// (one launch after another) and replayed as one CUDA graph per step, which
// also checks that enqueue_decode_step is capturable and that a replay gives
// bitwise the eager logits. The step runs at a fixed position after a
// prompt, rewriting that position's cache row each time.
//   build-gpu/executor_decode_bench [prompt_len=512]
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_executor.h"
#include "testing/random_model.h"

using namespace fsvd;

namespace {

constexpr int kSteps = 100;
constexpr double kCopyBandwidth = 4.24e12;  // H200 measured copy bandwidth, bytes/s (design.md)

double time_ms(cudaStream_t s, int steps, const std::function<void()>& one) {
  cudaEvent_t a, b;
  FSVD_CUDA_CHECK(cudaEventCreate(&a));
  FSVD_CUDA_CHECK(cudaEventCreate(&b));
  one();  // warm-up
  FSVD_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < steps; ++i) one();
  FSVD_CUDA_CHECK(cudaEventRecord(b, s));
  FSVD_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  FSVD_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / steps;
}

void bench(const std::string& name, const testing::RandomModelSpec& spec, int prompt_len) {
  const auto t0 = std::chrono::steady_clock::now();
  const Model m = testing::random_model(spec);
  cuda::CudaExecutor gpu(m, prompt_len + 8);
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<int32_t> prompt(prompt_len);
  for (int i = 0; i < prompt_len; ++i) prompt[i] = (i * 7919 + 13) % m.config.vocab;
  std::vector<float> logits;
  const auto t1 = std::chrono::steady_clock::now();
  gpu.forward(prompt, 0, false, logits);
  const double prefill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();

  // The next token at position prompt_len, set once; every step rewrites it.
  const int32_t token = 5;
  const int pos = prompt_len;
  cudaStream_t s = gpu.stream();
  FSVD_CUDA_CHECK(cudaMemcpy(gpu.d_token(), &token, sizeof token, cudaMemcpyHostToDevice));
  FSVD_CUDA_CHECK(cudaMemcpy(gpu.d_pos(), &pos, sizeof pos, cudaMemcpyHostToDevice));
  const double eager = time_ms(s, kSteps, [&] { gpu.enqueue_decode_step(s); });
  std::vector<float> eager_logits(m.config.vocab), graph_logits(m.config.vocab);
  FSVD_CUDA_CHECK(cudaMemcpy(eager_logits.data(), gpu.d_logits(), eager_logits.size() * 4,
                             cudaMemcpyDeviceToHost));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  gpu.enqueue_decode_step(s);
  FSVD_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  size_t nodes = 0;
  FSVD_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  FSVD_CUDA_CHECK(cudaMemset(const_cast<float*>(gpu.d_logits()), 0, eager_logits.size() * 4));
  const double replay = time_ms(s, kSteps, [&] { FSVD_CUDA_CHECK(cudaGraphLaunch(exec, s)); });
  FSVD_CUDA_CHECK(cudaMemcpy(graph_logits.data(), gpu.d_logits(), graph_logits.size() * 4,
                             cudaMemcpyDeviceToHost));
  const bool same = std::memcmp(eager_logits.data(), graph_logits.data(), eager_logits.size() * 4) == 0;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  const double floor_ms = gpu.weight_bytes() / kCopyBandwidth * 1e3;
  std::printf(
      "%-34s layers %2d  weights %8.1f MB  floor %.3f ms | eager %.3f ms  graph %.3f ms (%zu nodes, "
      "replay %s eager) | setup %.1f s, token-by-token prefill of %d: %.2f s\n",
      name.c_str(), spec.config.n_layers, gpu.weight_bytes() / 1e6, floor_ms, eager, replay, nodes,
      same ? "==" : "!=", setup_s, prompt_len, prefill_s);
}

}  // namespace

int main(int argc, char** argv) {
  const int prompt_len = argc > 1 ? std::atoi(argv[1]) : 512;
  try {
    // SmolLM2-135M shapes, dense.
    testing::RandomModelSpec smol;
    smol.config = testing::small_config(576, 1536, 30, 9, 3, 64, 49152, 2048);
    smol.config.tied_embeddings = true;
    bench("SmolLM2-135M shapes, dense", smol, prompt_len);
    // LLaMA-7B shapes at ratio 0.5 (attention r 1024, MLP r 1492), fewer
    // layers to keep host-side model generation short; scale per layer.
    testing::RandomModelSpec llama;
    llama.config = testing::small_config(4096, 11008, 2, 32, 32, 128, 32000, 4096);
    llama.ranks = {1024, 1024, 1024, 1024, 1492, 1492, 1492};
    bench("LLaMA-7B shapes, low-rank 0.5", llama, prompt_len);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
