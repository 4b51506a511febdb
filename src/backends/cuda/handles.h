#pragma once
// Move-only owners of CUDA handles (streams, events, graphs, graph execs, and
// cuBLASLt's through gemm.h) and of pinned host memory, so that an object
// whose constructor throws half-way releases what it had already created.
// C++17 (kernel benches include it through event_timer.h).
#include <cuda_runtime_api.h>

#include <utility>

namespace fsvd::cuda {

// Owns a handle of pointer type H, released by Destroy. Destroy's status is
// ignored: a destructor cannot throw, and a failure there means a dead context.
template <typename H, auto Destroy>
class Handle {
 public:
  Handle() = default;
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  H get() const { return h_; }
  operator H() const { return h_; }  // passes for the raw handle in CUDA calls
  H operator->() const { return h_; }
  // Where a create call writes a new handle; the one held before is released.
  H* put() {
    reset();
    return &h_;
  }
  void reset() {
    if (h_) Destroy(h_);
    h_ = nullptr;
  }

 private:
  H h_ = nullptr;
};

using Stream = Handle<cudaStream_t, cudaStreamDestroy>;
using Event = Handle<cudaEvent_t, cudaEventDestroy>;
using Graph = Handle<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = Handle<cudaGraphExec_t, cudaGraphExecDestroy>;

template <typename T>
cudaError_t free_host(T* p) {
  return cudaFreeHost(p);
}
// Pinned host memory: cudaHostAlloc(reinterpret_cast<void**>(p.put()), bytes, flags).
template <typename T>
using PinnedHost = Handle<T*, free_host<T>>;

}  // namespace fsvd::cuda
