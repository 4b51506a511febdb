#include "backends/cuda/gemm.h"

#include "backends/cuda/cuda_check.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

// cuBLAS's recommended workspace on Hopper.
constexpr size_t kWorkspaceBytes = 32u << 20;

cudaDataType_t cuda_type(ElementType t) { return t == ElementType::F32 ? CUDA_R_32F : CUDA_R_16BF; }

}  // namespace

Gemm::Gemm(cudaStream_t stream) : workspace_(kWorkspaceBytes) {
  FSVD_CUDA_CHECK(cublasCreate(&handle_));
  FSVD_CUDA_CHECK(cublasSetStream(handle_, stream));
  FSVD_CUDA_CHECK(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()));
}

Gemm::~Gemm() {
  if (handle_) cublasDestroy(handle_);
}

void Gemm::run(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t n, void* y, int64_t ldy,
               ElementType y_type, bool accumulate) {
  check(w.data && x && y && n >= 0 && ldx >= w.cols && ldy >= w.rows, "Gemm::run", "bad operands: W [", w.rows,
        ", ", w.cols, "], ldx ", ldx, ", ldy ", ldy, ", n ", n);
  check(!accumulate || y_type == ElementType::F32, "Gemm::run", "accumulation needs an fp32 output");
  if (n == 0) return;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  // Column-major view: yᵀ[out, n] = W[out, in] (W row-major is Wᵀ column-major,
  // hence OP_T) times xᵀ[in, n].
  FSVD_CUDA_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows), static_cast<int>(n),
                               static_cast<int>(w.cols), &alpha, w.data, cuda_type(w.type), static_cast<int>(w.ld),
                               x, cuda_type(w.type), static_cast<int>(ldx), &beta, y, cuda_type(y_type),
                               static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void Gemm::run_batched(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t x_step, int64_t n, void* y,
                       int64_t ldy, int64_t y_step, int batch, ElementType y_type) {
  check(w.data && x && y && n >= 0 && batch >= 1 && ldx >= w.cols && ldy >= w.rows, "Gemm::run_batched",
        "bad operands: W [", w.rows, ", ", w.cols, "] x ", batch, ", ldx ", ldx, ", ldy ", ldy, ", n ", n);
  if (n == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  FSVD_CUDA_CHECK(cublasGemmStridedBatchedEx(
      handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows), static_cast<int>(n), static_cast<int>(w.cols),
      &alpha, w.data, cuda_type(w.type), static_cast<int>(w.ld), w.rows * w.ld, x, cuda_type(w.type),
      static_cast<int>(ldx), x_step, &beta, y, cuda_type(y_type), static_cast<int>(ldy), y_step, batch,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

DeviceMatrix row_slice(const DeviceMatrix& w, int64_t begin, int64_t end) {
  check(0 <= begin && begin <= end && end <= w.rows, "row_slice", "rows [", begin, ", ", end, ") of ", w.rows);
  DeviceMatrix s = w;
  s.data = static_cast<const uint8_t*>(w.data) + begin * w.ld * element_bytes(w.type);
  s.rows = end - begin;
  return s;
}

}  // namespace fsvd::cuda
