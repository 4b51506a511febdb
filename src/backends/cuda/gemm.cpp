#include "backends/cuda/gemm.h"

#include <cuda_runtime.h>

#include <memory>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/skinny_gemm.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

// cuBLAS's recommended workspace on Hopper.
constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr int kTimedRuns = 3;  // launches timed together per candidate, after one warm-up

cudaDataType_t cuda_type(ElementType t) { return t == ElementType::F32 ? CUDA_R_32F : CUDA_R_16BF; }

// Into `l` (which owns it even if setting an attribute fails).
void make_layout(cublasLtMatrixLayout_t* l, ElementType type, int64_t rows, int64_t cols, int64_t ld, int batch,
                 int64_t step) {
  FSVD_CUDA_CHECK(cublasLtMatrixLayoutCreate(l, cuda_type(type), rows, cols, ld));
  if (batch > 1) {
    FSVD_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    FSVD_CUDA_CHECK(
        cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &step, sizeof(step)));
  }
}

}  // namespace

size_t Gemm::Problem::c_bytes() const {
  return static_cast<size_t>((batch - 1) * c_step + (n - 1) * ldc + m) * element_bytes(c);
}

Gemm::Plan::Plan(const Problem& p) {
  FSVD_CUDA_CHECK(cublasLtMatmulDescCreate(op.put(), CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;  // W row-major is Wᵀ column-major
  FSVD_CUDA_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
  if (p.bias || p.gelu) {
    const cublasLtEpilogue_t epilogue = p.gelu ? (p.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                               : CUBLASLT_EPILOGUE_BIAS;
    FSVD_CUDA_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  }
  if (p.bias && p.batch > 1) {  // product i's bias follows product i - 1's
    const int64_t stride = p.m;
    FSVD_CUDA_CHECK(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &stride, sizeof(stride)));
  }
  make_layout(a.put(), p.ab, p.k, p.m, p.lda, p.batch, p.a_step);
  make_layout(b.put(), p.ab, p.k, p.n, p.ldb, p.batch, p.b_step);
  make_layout(c.put(), p.c, p.m, p.n, p.ldc, p.batch, p.c_step);
}

size_t Gemm::workspace_bytes() { return kWorkspaceBytes; }

Gemm::Gemm(cudaStream_t stream) : stream_(stream), workspace_(kWorkspaceBytes) {
  FSVD_CUDA_CHECK(cublasLtCreate(handle_.put()));
}

void Gemm::launch(const Problem& p, const Plan& plan, const cublasLtMatmulAlgo_t& algo, const void* a,
                  const void* b, void* c, const void* bias) const {
  const float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  if (p.bias)  // the descriptor is the plan's; launches are enqueued one at a time, each with its own vector
    FSVD_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  FSVD_CUDA_CHECK(cublasLtMatmul(handle_, plan.op, &alpha, a, plan.a, b, plan.b, &beta, c, plan.c, c, plan.c, &algo,
                                 workspace_.data(), workspace_.bytes(), stream_));
}

void Gemm::choose_algorithm(const Problem& p, Plan& plan, const void* a, const void* b, void* c, const void* bias) {
  Handle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
  FSVD_CUDA_CHECK(cublasLtMatmulPreferenceCreate(pref.put()));
  const size_t workspace = workspace_.bytes();
  FSVD_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                       sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t found[kCandidates] = {};
  int count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, plan.op, plan.a, plan.b, plan.c, plan.c, pref, kCandidates, found, &count);
  check(status == CUBLAS_STATUS_SUCCESS && count > 0, "Gemm", "cuBLASLt offers no algorithm for [", p.m, ", ", p.k,
        "] x [", p.k, ", ", p.n, "] (", cublasGetStatusName(status), ")");
  plan.algo = found[0].algo;
  // Timing needs synchronization, which a stream being captured into a graph
  // (the low-rank KV cache's rebuild in the decode step) does not allow.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  FSVD_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capturing));
  if (p.n < kTuneMinRows || count == 1 || capturing != cudaStreamCaptureStatusNone) return;

  // Time the candidates on the real operands. An accumulating product runs on
  // a copy of y, so y is added to once, by the caller's launch.
  DeviceBuffer<uint8_t> copy(p.accumulate ? p.c_bytes() : 0);
  void* out = c;
  if (p.accumulate) {
    FSVD_CUDA_CHECK(cudaMemcpyAsync(copy.data(), c, p.c_bytes(), cudaMemcpyDeviceToDevice, stream_));
    out = copy.data();
  }
  float best = 0;
  for (int i = 0; i < count; ++i) {
    launch(p, plan, found[i].algo, a, b, out, bias);  // warm-up
    const float ms = elapsed_ms(stream_, [&] {
      for (int r = 0; r < kTimedRuns; ++r) launch(p, plan, found[i].algo, a, b, out, bias);
    });
    if (i == 0 || ms < best) best = ms, plan.algo = found[i].algo;
  }
}

void Gemm::multiply(const Problem& p, const void* a, const void* b, void* c, const void* bias) {
  auto it = plans_.find(p);
  if (it == plans_.end()) {
    auto plan = std::make_unique<Plan>(p);
    choose_algorithm(p, *plan, a, b, c, bias);
    it = plans_.emplace(p, std::move(plan)).first;
  }
  launch(p, *it->second, it->second->algo, a, b, c, bias);
}

void Gemm::run(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t n, void* y, int64_t ldy,
               ElementType y_type, bool accumulate, const void* bias, Epilogue epilogue, const Fold& fold) {
  check(w.data && x && y && n >= 0 && ldx >= w.cols && ldy >= w.rows, "Gemm::run", "bad operands: W [", w.rows,
        ", ", w.cols, "], ldx ", ldx, ", ldy ", ldy, ", n ", n);
  check(!accumulate || y_type == ElementType::F32 || y_type == w.type, "Gemm::run",
        "accumulation needs an fp32 output or one of the weights' type");
  if (n == 0) return;
  const SkinnyGemm skinny{w, x, ldx, y, ldy, y_type, accumulate, 1, 0, 0, fold};
  if (fold.sums_in || fold.gained || fold.silu_up) {
    check(!bias && epilogue == Epilogue::bias, "Gemm::run", "a fold takes no bias or GELU");
    return skinny_gemm(skinny, n, stream_);  // which refuses, clearly, what it cannot fold
  }
  if (!bias && epilogue == Epilogue::bias && skinny_gemm_supports(skinny, n)) return skinny_gemm(skinny, n, stream_);
  multiply({w.rows, n, w.cols, w.ld, ldx, ldy, 0, 0, 0, 1, w.type, y_type, accumulate, bias != nullptr,
            epilogue == Epilogue::gelu_bias},
           w.data, x, y, bias);
}

void Gemm::run_batched(const DeviceMatrix& w, const void* x, int64_t ldx, int64_t x_step, int64_t n, void* y,
                       int64_t ldy, int64_t y_step, int batch, ElementType y_type, const void* bias) {
  check(w.data && x && y && n >= 0 && batch >= 1 && ldx >= w.cols && ldy >= w.rows, "Gemm::run_batched",
        "bad operands: W [", w.rows, ", ", w.cols, "] x ", batch, ", ldx ", ldx, ", ldy ", ldy, ", n ", n);
  if (n == 0) return;
  const SkinnyGemm skinny{w, x, ldx, y, ldy, y_type, false, batch, x_step, y_step, {}};
  if (!bias && skinny_gemm_supports(skinny, n)) return skinny_gemm(skinny, n, stream_);
  multiply({w.rows, n, w.cols, w.ld, ldx, ldy, w.rows * w.ld, x_step, y_step, batch, w.type, y_type, false,
            bias != nullptr, false},
           w.data, x, y, bias);
}

DeviceMatrix row_slice(const DeviceMatrix& w, int64_t begin, int64_t end) {
  check(0 <= begin && begin <= end && end <= w.rows, "row_slice", "rows [", begin, ", ", end, ") of ", w.rows);
  DeviceMatrix s = w;
  s.data = static_cast<const uint8_t*>(w.data) + begin * w.ld * element_bytes(w.type);
  s.rows = end - begin;
  return s;
}

}  // namespace fsvd::cuda
