#pragma once
// Typed device allocation that frees itself: move-only, so ownership of GPU
// memory is always visible in the type. Copies to and from the host are
// synchronous (setup and tests; hot paths use streams directly).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"

namespace fsvd::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) {
    check(count <= SIZE_MAX / sizeof(T), "DeviceBuffer", "allocation of ", count,
          " elements overflows size_t");
    if (count > 0) FSVD_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
    size_ = count;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // cannot throw from a destructor; a failure here means a dead context
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      DeviceBuffer dying(std::move(*this));
      ptr_ = std::exchange(other.ptr_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return ptr_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  // All bytes zero.
  void zero() {
    if (size_ > 0) FSVD_CUDA_CHECK(cudaMemset(ptr_, 0, bytes()));
  }
  // Copies host values into the first host.size() elements.
  void upload(std::span<const T> host) {
    check(host.size() <= size_, "DeviceBuffer::upload", host.size(), " elements into a buffer of ",
          size_);
    if (!host.empty())
      FSVD_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_ > 0) FSVD_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fsvd::cuda
