// Prefill GEMMs (one 4096-token chunk, LLaMA-7B keep 0.5 and dense): the
// algorithm cublasGemmEx picks (as Gemm::run calls it) against every
// algorithm cuBLASLt's heuristic offers for the same operands, each timed
// alone (median of 15 calls after 3 warm-ups, CUDA events). Says how much
// a per-shape choice of algorithm could save.
//
// Built by CMake (bench/kernels/CMakeLists.txt); on the GPU machine (H100/H200),
// after `scripts/gpu_bundle.sh benches` here: build/gpu-bundle/run-bench.sh gemm_algos_bench
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/device_buffer.h"

using namespace fsvd::cuda;

namespace {

constexpr int kTokens = 4096;
constexpr size_t kWorkspace = 32u << 20;

struct Shape {
  const char* name;
  int out, in;
  bool bf16_out, accumulate;
};

const Shape kShapes[] = {
    {"qkv first [3072,4096]", 3072, 4096, false, false},   {"q second [4096,1024]", 4096, 1024, false, false},
    {"o first [1024,4096]", 1024, 4096, true, false},      {"o second += [4096,1024]", 4096, 1024, false, true},
    {"gate|up first [2984,4096]", 2984, 4096, false, false}, {"gate second [11008,1496]", 11008, 1496, true, false},
    {"down first [1496,11008]", 1496, 11008, true, false}, {"down second += [4096,1496]", 4096, 1496, false, true},
    {"dense qkv [12288,4096]", 12288, 4096, false, false}, {"dense o += [4096,4096]", 4096, 4096, false, true},
    {"dense gate|up [22016,4096]", 22016, 4096, true, false}, {"dense down += [4096,11008]", 4096, 11008, false, true},
};

double median_us(const std::function<void()>& call) {
  for (int i = 0; i < 3; ++i) call();
  std::vector<float> t;
  for (int i = 0; i < 15; ++i) t.push_back(elapsed_ms(nullptr, call) * 1e3f);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  FSVD_CUDA_CHECK(cublasCreate(&blas));
  FSVD_CUDA_CHECK(cublasLtCreate(&lt));
  DeviceBuffer<uint8_t> workspace(kWorkspace);
  FSVD_CUDA_CHECK(cublasSetWorkspace(blas, workspace.data(), workspace.bytes()));
  DeviceBuffer<__nv_bfloat16> w(size_t{22016} * 11008), x(size_t{kTokens} * 11008);
  DeviceBuffer<float> y(size_t{kTokens} * 22016);
  FSVD_CUDA_CHECK(cudaMemset(w.data(), 0x3c, w.bytes()));  // bf16 ~0.01: finite products
  FSVD_CUDA_CHECK(cudaMemset(x.data(), 0x3c, x.bytes()));
  FSVD_CUDA_CHECK(cudaMemset(y.data(), 0, y.bytes()));

  double total_default = 0, total_best = 0;
  std::printf("%-28s %10s %10s %9s %s\n", "shape (4096 tokens)", "default us", "best us", "TFLOP/s", "algos tried");
  for (const Shape& s : kShapes) {
    const cudaDataType_t yt = s.bf16_out ? CUDA_R_16BF : CUDA_R_32F;
    const float alpha = 1, beta = s.accumulate ? 1 : 0;
    const int m = s.out, n = kTokens, k = s.in, lda = (k + 7) / 8 * 8;
    const double t_default = median_us([&] {
      FSVD_CUDA_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w.data(), CUDA_R_16BF, lda,
                                   x.data(), CUDA_R_16BF, lda, &beta, y.data(), yt, m, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
    });

    cublasLtMatmulDesc_t op;
    FSVD_CUDA_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    FSVD_CUDA_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    FSVD_CUDA_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    cublasLtMatrixLayout_t la, lb, lc;
    FSVD_CUDA_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, lda));
    FSVD_CUDA_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, lda));
    FSVD_CUDA_CHECK(cublasLtMatrixLayoutCreate(&lc, yt, m, n, m));
    cublasLtMatmulPreference_t pref;
    FSVD_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    FSVD_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                                         sizeof(kWorkspace)));
    cublasLtMatmulHeuristicResult_t results[32];
    int count = 0;
    FSVD_CUDA_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 32, results, &count));
    double best = 1e30;
    int best_i = -1;
    for (int i = 0; i < count; ++i) {
      const double t = median_us([&] {
        FSVD_CUDA_CHECK(cublasLtMatmul(lt, op, &alpha, w.data(), la, x.data(), lb, &beta, y.data(), lc, y.data(), lc,
                                       &results[i].algo, workspace.data(), kWorkspace, nullptr));
      });
      if (t < best) best = t, best_i = i;
    }
    const double flop = 2.0 * m * n * k;
    std::printf("%-28s %10.1f %10.1f %9.0f %d (best: #%d)\n", s.name, t_default, best, flop / best / 1e6, count,
                best_i);
    total_default += t_default;
    total_best += std::min(best, t_default);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }
  std::printf("sum: default %.1f us, best %.1f us\n", total_default, total_best);
  // The q, k, v second factors of one layer as one strided batched call (as
  // prefill runs the gate and up second factors) against three calls.
  {
    const float alpha = 1, beta = 0;
    const int m = 4096, n = kTokens, k = 1024;
    const double three = median_us([&] {
      for (int i = 0; i < 3; ++i)
        FSVD_CUDA_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w.data() + size_t(i) * m * k,
                                     CUDA_R_16BF, k, x.data() + i * k, CUDA_R_16BF, 3 * k, &beta,
                                     y.data() + size_t(i) * m * n, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
    });
    const double batched = median_us([&] {
      FSVD_CUDA_CHECK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w.data(),
                                                 CUDA_R_16BF, k, int64_t{m} * k, x.data(), CUDA_R_16BF, 3 * k, k,
                                                 &beta, y.data(), CUDA_R_32F, m, int64_t{m} * n, 3,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    std::printf("q, k, v second [4096,1024] x3: three calls %.1f us, one batched call %.1f us\n", three, batched);
  }
  cublasLtDestroy(lt);
  cublasDestroy(blas);
  return 0;
}
