#pragma once
// The linear layers of prompt chunks and of decode steps of 2+ rows: Y[n, out]
// = X[n, in] · W^T (tensor cores, fp32 accumulation). W is a decode-layout
// weight (device_matrix.h) used as it is; X has W's element type. Up to
// kSkinnyAnyRows rows of bf16 without a bias (kSkinnyMaxRows for a first
// factor's shape: skinny_gemm_supports) run on skinny_gemm (a weight stream
// of our own, skinny_gemm.h); everything else through cuBLASLt.
//
// Each distinct problem (shapes, strides, types, accumulation) gets its
// cuBLASLt descriptors once; from kTuneMinRows rows on, the first call also
// times the heuristic's first kCandidates algorithms on the real operands and
// keeps the fastest (the heuristic's first choice is not always the fastest:
// bench/kernels/gemm_algos_bench.cu, bench/kernels/prefill_attention_notes.md),
// unless the stream is being captured into a graph: then the heuristic's
// first choice is kept.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_matrix.h"
#include "backends/cuda/handles.h"
#include "backends/cuda/skinny_gemm.h"

namespace fsvd::cuda {

// What the epilogue does after adding the bias (when one is given): nothing,
// or GELU in cuBLASLt's tanh form (within bf16 rounding of the erf form's
// values; the encoder's bf16 up projection).
enum class Epilogue : uint8_t { bias, gelu_bias };

class Gemm {
 public:
  static constexpr int64_t kTuneMinRows = 1024;  // shorter chunks take the heuristic's choice
  static constexpr int kCandidates = 8;

  explicit Gemm(cudaStream_t stream);  // every call is enqueued on `stream`
  static size_t workspace_bytes();     // device memory each instance holds

  // y = x · wᵀ (+ bias), or y += x · wᵀ (+ bias) when `accumulate` (the
  // residual add, free in the GEMM epilogue). x: [n, w.cols] of w.type with
  // row stride ldx; y: [n, w.rows] of y_type with row stride ldy (fp32 or
  // w.type when accumulating); bias: null, or w.rows values of y_type (the
  // encoder's linears, whose biases the epilogue adds), then `epilogue`.
  // `fold`: an RMSNorm or SiLU·up folded into a decode step's product
  // (skinny_gemm.h's Fold; only skinny_gemm folds, so a product it does not
  // take throws).
  void run(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t n, void* y, int64_t ldy, ElementType y_type,
           bool accumulate = false, const void* bias = nullptr, Epilogue epilogue = Epilogue::bias,
           const Fold& fold = {});
  // `batch` such products in one launch, product i on w's rows
  // [i * w.rows, (i + 1) * w.rows), x + i * x_step and y + i * y_step (steps
  // in elements), adding bias + i * w.rows when a bias is given: the gate and
  // up (or q, k and v) second factors, which read different columns of one
  // staging buffer, fill more of the GPU together.
  void run_batched(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t x_step, int64_t n, void* y,
                   int64_t ldy, int64_t y_step, int batch, ElementType y_type, const void* bias = nullptr);

 private:
  // Column-major view (cuBLAS's): yᵀ[m, n] = op(W)[m, k] · xᵀ[k, n].
  struct Problem {
    int64_t m, n, k, lda, ldb, ldc, a_step, b_step, c_step;
    int batch;
    ElementType ab, c;
    bool accumulate;
    bool bias;  // the epilogue adds a bias vector (its pointer is set per launch)
    bool gelu;  // then applies GELU
    auto operator<=>(const Problem&) const = default;
    size_t c_bytes() const;  // the extent of y the product writes
  };
  using MatmulDesc = Handle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
  using MatrixLayout = Handle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
  // A problem's descriptors and chosen algorithm.
  struct Plan {
    MatmulDesc op;
    MatrixLayout a, b, c;
    cublasLtMatmulAlgo_t algo{};
    explicit Plan(const Problem& p);
  };
  // c = (c +) a · b through the problem's plan, made (and tuned) on first use.
  void multiply(const Problem& p, const void* a, const void* b, void* c, const void* bias = nullptr);
  void choose_algorithm(const Problem& p, Plan& plan, const void* a, const void* b, void* c, const void* bias);
  void launch(const Problem& p, const Plan& plan, const cublasLtMatmulAlgo_t& algo, const void* a, const void* b,
              void* c, const void* bias) const;

  cudaStream_t stream_;
  Handle<cublasLtHandle_t, cublasLtDestroy> handle_;  // declared first: destroyed after the plans' descriptors
  DeviceBuffer<uint8_t> workspace_;
  std::map<Problem, std::unique_ptr<Plan>> plans_;
};

// Rows [begin, end) of w as a matrix of their own (no copy).
DeviceMatrix row_slice(const DeviceMatrix& w, int64_t begin, int64_t end);

}  // namespace fsvd::cuda
