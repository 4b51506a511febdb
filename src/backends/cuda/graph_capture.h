#pragma once
// Capturing stream work into a CUDA graph, shared by the decode step's graphs
// and the encoder's per-shape graphs.
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/handles.h"

namespace fsvd::cuda {

// Captures what `enqueue` puts on `stream` into a graph (not run). Relaxed:
// the launchers may query or set function attributes while capturing. If
// `enqueue` throws, the capture ends and the partial graph is dropped.
template <typename Enqueue>
Graph capture_graph(cudaStream_t stream, Enqueue&& enqueue) {
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  Graph graph;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream, graph.put());
    throw;
  }
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, graph.put()));
  return graph;
}

}  // namespace fsvd::cuda
