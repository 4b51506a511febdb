#pragma once
// The prefill's linear layers: Y[n, out] = X[n, in] · W^T for a whole prompt
// chunk through cuBLAS (tensor cores, fp32 accumulation). W is a decode-layout
// weight (device_matrix.h) used as it is; X has W's element type.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

class Gemm {
 public:
  explicit Gemm(cudaStream_t stream);  // every call is enqueued on `stream`
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // y = x · wᵀ, or y += x · wᵀ when `accumulate` (the residual add, free in
  // the GEMM epilogue). x: [n, w.cols] of w.type with row stride ldx; y:
  // [n, w.rows] of y_type with row stride ldy (fp32 when accumulating).
  void run(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t n, void* y, int64_t ldy, ElementType y_type,
           bool accumulate = false);
  // `batch` such products in one launch, product i on w's rows
  // [i * w.rows, (i + 1) * w.rows), x + i * x_step and y + i * y_step (steps
  // in elements): the gate and up second factors, which read different
  // columns of one staging buffer, fill more of the GPU together.
  void run_batched(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t x_step, int64_t n, void* y,
                   int64_t ldy, int64_t y_step, int batch, ElementType y_type);

 private:
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer<uint8_t> workspace_;
};

// Rows [begin, end) of w as a matrix of their own (no copy).
DeviceMatrix row_slice(const DeviceMatrix& w, int64_t begin, int64_t end);

}  // namespace fsvd::cuda
