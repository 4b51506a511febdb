// Times cuda::sample_tokens on one row per call over CUDA-graph replays (the
// single-sequence decode step's sampling), next to cuda::argmax (one pass over
// the row by one CTA, the floor any sampler pays), for vocabularies of 32000,
// 128256 and 262144 and two logit shapes:
//   peaked: N(0, 2.5) with 30 tokens raised to 8..14, like a confident LM head;
//   flat:   N(0, 0.5), where the top-p nucleus spans much of the vocabulary.
// Prints microseconds per call and the kept-set size of each configuration.
// Batches are timed by op_perf (the op table's sample_tokens cases).
#include <cstdio>
#include <random>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/sampling.h"
#include "backends/cuda/token_select.h"

using namespace fsvd::cuda;
using fsvd::SamplingParams;

namespace {

constexpr int kCallsPerGraph = 200;
constexpr int kReplays = 10;

std::vector<float> make_logits(int n, bool peaked, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, peaked ? 2.5f : 0.5f);
  std::vector<float> l(n);
  for (float& x : l) x = normal(rng);
  if (peaked)
    for (int j = 0; j < 30 && j < n; ++j) l[rng() % n] = 8.0f + 6.0f * j / 30;
  return l;
}

// Microseconds per call of what `call` enqueues.
template <typename Call>
double us_per_call(cudaStream_t stream, Call&& call) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  for (int i = 0; i < kCallsPerGraph; ++i) call();
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  FSVD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // warm-up
  const float ms = elapsed_ms(stream, [&] {
    for (int r = 0; r < kReplays; ++r) FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  });
  FSVD_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FSVD_CUDA_CHECK(cudaGraphDestroy(graph));
  return 1000.0 * ms / (kReplays * kCallsPerGraph);
}

}  // namespace

int main() {
  const SamplingParams configs[] = {{0.0f, 0, 1.0f, 1},  {1.0f, 0, 1.0f, 1},    {0.8f, 50, 1.0f, 1},
                                    {0.8f, 0, 0.9f, 1},  {0.8f, 50, 0.9f, 1},   {1.0f, 0, 0.99f, 1},
                                    {1.0f, 1000, 1.0f, 1}, {0.6f, 40, 0.95f, 1}};
  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreate(&stream));
  DeviceBuffer<int32_t> step(1), token(1);
  step.upload(std::vector<int32_t>{17});
  DeviceBuffer<SamplingParams> params(1);
  std::printf("%-7s %-7s %-5s %-5s %-6s %9s %8s\n", "vocab", "logits", "T", "top_k", "top_p",
              "us/call", "kept");
  for (int n : {32000, 128256, 262144}) {
    for (bool peaked : {true, false}) {
      DeviceBuffer<float> logits(n);
      logits.upload(make_logits(n, peaked, 1234 + n));
      DeviceBuffer<uint8_t> kept(n);
      for (const SamplingParams& c : configs) {
        params.upload(std::vector<SamplingParams>{c});
        sample_tokens(logits.data(), 1, n, n, params.data(), step.data(), token.data(), stream, kept.data());
        FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
        int kept_count = 0;
        for (uint8_t k : kept.download()) kept_count += k;
        const double us = us_per_call(stream, [&] {
          sample_tokens(logits.data(), 1, n, n, params.data(), step.data(), token.data(), stream);
        });
        std::printf("%-7d %-7s %-5.2f %-5d %-6.3f %9.2f %8d\n", n, peaked ? "peaked" : "flat", c.temperature,
                    c.top_k, c.top_p, us, kept_count);
      }
      const double us = us_per_call(stream, [&] { argmax(logits.data(), n, token.data(), stream); });
      std::printf("%-7d %-7s %-25s %9.2f\n", n, peaked ? "peaked" : "flat", "cuda::argmax", us);
    }
  }
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
