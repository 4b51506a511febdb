// Would CUTLASS's Hopper GEMMs (TMA, warp-specialized, persistent, fused epilogue) beat cuBLASLt on the BERT
// encoder's second factors? Y [16384, N] = X [16384, K] · W [N, K]^T in bf16, fp32 accumulation:
//   up second   N 3072, K 312: + bias, GELU (tanh form, as cuBLASLt's GELU_BIAS)
//   down second N  768, K 312: + bias, added to Y (beta 1)
//   o second    N  768, K 192: + bias, added to Y
//   q second    N  768, K 192: + bias
// CUTLASS 4.2 (pip nvidia-cutlass, headers only) in three schedules against cuBLASLt (the best of its
// heuristic's first 8 algorithms, timed here, as flashsvd's Gemm does), same operands, same timing: operand sets
// rotate so L2 holds none of them. Outputs compared with cuBLASLt's. Prints one line a (shape, engine).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define LT(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { std::printf("%s: %d\n", #x, int(s_)); std::exit(1); } } while (0)

using namespace cute;
using bf16 = cutlass::bfloat16_t;

constexpr int kRows = 16384;

struct Problem { const char* name; int n, k; bool gelu, accumulate; };

// One CUTLASS GEMM: A = X [M, K] row-major, B = W as [K, N] column-major (W [N, K] row-major), C = D = Y [M, N]
// row-major; bias per column of Y.
template <class Tile, class Cluster, class MainSchedule, class EpiSchedule, bool kGelu>
struct CutlassGemm {
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutC = cutlass::layout::RowMajor;
  static constexpr int kAlign = 8;
  using Fusion = cute::conditional_t<
      kGelu, cutlass::epilogue::fusion::LinCombPerColBiasEltAct<cutlass::epilogue::thread::GELU_taylor, bf16, float, bf16, bf16, float>,
      cutlass::epilogue::fusion::LinCombPerColBias<bf16, float, bf16, bf16, float>>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster, cutlass::epilogue::collective::EpilogueTileAuto,
      float, float, bf16, LayoutC, kAlign, bf16, LayoutC, kAlign, EpiSchedule, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, bf16, LayoutA, kAlign, bf16, LayoutB, kAlign, float, Tile,
      Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      MainSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue,
                                                      cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  Gemm gemm;
  void* workspace = nullptr;

  // Returns false where CUTLASS refuses the problem.
  bool init(int m, int n, int k, const bf16* x, const bf16* w, bf16* y, const bf16* bias, bool accumulate) {
    typename Kernel::StrideA sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(m, k, 1));
    typename Kernel::StrideB sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(n, k, 1));
    typename Kernel::StrideC sc = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, cute::make_shape(m, n, 1));
    typename Kernel::StrideD sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(m, n, 1));
    cutlass::KernelHardwareInfo hw;
    hw.device_id = 0;
    hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {m, n, k, 1}, {x, sa, w, sb},
                                  {{}, y, sc, y, sd}, hw};
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = accumulate ? 1.0f : 0.0f;
    args.epilogue.thread.bias_ptr = bias;
    if (gemm.can_implement(args) != cutlass::Status::kSuccess) return false;
    const size_t bytes = Gemm::get_workspace_size(args);
    if (workspace) cudaFree(workspace), workspace = nullptr;
    if (bytes) CK(cudaMalloc(&workspace, bytes));
    return gemm.initialize(args, workspace) == cutlass::Status::kSuccess;
  }
  bool run(cudaStream_t s) { return gemm.run(s) == cutlass::Status::kSuccess; }
};

using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using Ping = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpiCoop = cutlass::epilogue::TmaWarpSpecializedCooperative;
using EpiPing = cutlass::epilogue::TmaWarpSpecialized;
template <bool G> using CoopA = CutlassGemm<cute::Shape<_128, _256, _64>, cute::Shape<_1, _1, _1>, Coop, EpiCoop, G>;
template <bool G> using CoopB = CutlassGemm<cute::Shape<_256, _128, _64>, cute::Shape<_1, _1, _1>, Coop, EpiCoop, G>;
template <bool G> using PingA = CutlassGemm<cute::Shape<_64, _256, _64>, cute::Shape<_1, _1, _1>, Ping, EpiPing, G>;
template <bool G> using PingB = CutlassGemm<cute::Shape<_128, _128, _64>, cute::Shape<_1, _1, _1>, Ping, EpiPing, G>;

// Operand sets: X, W, bias, Y (Y starts from the same values in every set, for the accumulating shapes).
struct Operands { bf16 *x, *w, *bias, *y; };

__global__ void fill(bf16* p, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed * 40503u;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = bf16((float(h & 0xffff) / 65535.0f - 0.5f) * scale);
  }
}

// Mean ms of `reps` runs of launch(set) over the operand sets in turn, after warm-up.
template <class F>
float time_ms(int sets, F launch) {
  for (int i = 0; i < 2 * sets; ++i) launch(i % sets);
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  const int reps = 40;
  cudaEventRecord(a);
  for (int i = 0; i < reps; ++i) launch(i % sets);
  cudaEventRecord(b);
  CK(cudaEventSynchronize(b));
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  return ms / reps;
}

// cuBLASLt as flashsvd's Gemm calls it: Y^T [N, M] col-major = W [N, K] (A, transposed) x X^T [K, M].
struct Lt {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  void* ws;
  size_t ws_bytes = 32 << 20;
  std::vector<cublasLtMatmulAlgo_t> algos;
  Lt(const Problem& s) {
    LT(cublasLtCreate(&h));
    LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt)));
    cublasLtEpilogue_t epi = s.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    cudaDataType_t bt = CUDA_R_16BF;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
    LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.k, s.n, s.k));
    LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.k, kRows, s.k));
    LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, s.n, kRows, s.n));
    CK(cudaMalloc(&ws, ws_bytes));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)));
    cublasLtMatmulHeuristicResult_t found[8];
    int count = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 8, found, &count));
    for (int i = 0; i < count; ++i) algos.push_back(found[i].algo);
  }
  void run(const Operands& o, bool accumulate, const cublasLtMatmulAlgo_t& algo) {
    const float alpha = 1, beta = accumulate ? 1 : 0;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &o.bias, sizeof(o.bias)));
    LT(cublasLtMatmul(h, op, &alpha, o.w, la, o.x, lb, &beta, o.y, lc, o.y, lc, &algo, ws, ws_bytes, 0));
  }
};

std::vector<float> download(const bf16* p, size_t n) {
  std::vector<bf16> h(n);
  CK(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = float(h[i]);
  return f;
}

template <class G>
void try_cutlass(const char* name, const Problem& s, std::vector<Operands>& sets, const std::vector<float>& want,
                 const Operands& check, float lt_ms) {
  std::vector<G*> g(sets.size());
  for (size_t i = 0; i < sets.size(); ++i) {
    g[i] = new G;
    if (!g[i]->init(kRows, s.n, s.k, sets[i].x, sets[i].w, sets[i].y, sets[i].bias, s.accumulate)) {
      std::printf("%-12s %-22s refused\n", s.name, name);
      return;
    }
  }
  const float ms = time_ms(int(sets.size()), [&](int i) { g[i]->run(0); });
  // Correctness: one run from the check set's starting Y, against cuBLASLt's result.
  G c;
  const size_t ny = size_t(kRows) * s.n;
  CK(cudaMemcpy(sets[0].y, check.y, ny * 2, cudaMemcpyDeviceToDevice));
  c.init(kRows, s.n, s.k, sets[0].x, sets[0].w, sets[0].y, sets[0].bias, s.accumulate);
  c.run(0);
  CK(cudaDeviceSynchronize());
  const std::vector<float> got = download(sets[0].y, ny);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < ny; ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i]))), scale = std::max(scale, double(std::fabs(want[i])));
  std::printf("%-12s %-22s %8.2f us  %5.2fx cuBLASLt  max |diff| %.3g of max %.3g\n", s.name, name, ms * 1e3,
              lt_ms / ms, worst, scale);
}

int main() {
  const Problem shapes[] = {{"up second", 3072, 312, true, false},
                          {"down second", 768, 312, false, true},
                          {"o second", 768, 192, false, true},
                          {"q second", 768, 192, false, false}};
  for (const Problem& s : shapes) {
    const size_t nx = size_t(kRows) * s.k, nw = size_t(s.n) * s.k, ny = size_t(kRows) * s.n;
    const int sets_n = int(std::max<size_t>(2, (240u << 20) / ((nx + nw + ny) * 2)));
    std::vector<Operands> sets(sets_n);
    for (int i = 0; i < sets_n; ++i) {
      Operands& o = sets[i];
      CK(cudaMalloc(&o.x, nx * 2));
      CK(cudaMalloc(&o.w, nw * 2));
      CK(cudaMalloc(&o.bias, s.n * 2));
      CK(cudaMalloc(&o.y, ny * 2));
      fill<<<512, 256>>>(o.x, nx, 1, 2.0f);
      fill<<<512, 256>>>(o.w, nw, 2, 0.2f);
      fill<<<64, 256>>>(o.bias, s.n, 3, 0.5f);
      fill<<<512, 256>>>(o.y, ny, 4, 1.0f);
    }
    Operands check = sets[0];
    CK(cudaMalloc(&check.y, ny * 2));
    CK(cudaMemcpy(check.y, sets[0].y, ny * 2, cudaMemcpyDeviceToDevice));
    Lt lt(s);
    float best = 1e30f;
    size_t best_i = 0;
    for (size_t a = 0; a < lt.algos.size(); ++a) {
      const float ms = time_ms(sets_n, [&](int i) { lt.run(sets[i], s.accumulate, lt.algos[a]); });
      if (ms < best) best = ms, best_i = a;
    }
    std::printf("%-12s %-22s %8.2f us  (best of %zu algorithms: #%zu)\n", s.name, "cuBLASLt", best * 1e3,
                lt.algos.size(), best_i);
    // The reference result: cuBLASLt's best from the check set's starting Y.
    CK(cudaMemcpy(sets[0].y, check.y, ny * 2, cudaMemcpyDeviceToDevice));
    lt.run(sets[0], s.accumulate, lt.algos[best_i]);
    CK(cudaDeviceSynchronize());
    const std::vector<float> want = download(sets[0].y, ny);
    if (s.gelu) {
      try_cutlass<CoopA<true>>("coop 128x256", s, sets, want, check, best);
      try_cutlass<CoopB<true>>("coop 256x128", s, sets, want, check, best);
      try_cutlass<PingA<true>>("pingpong 64x256", s, sets, want, check, best);
      try_cutlass<PingB<true>>("pingpong 128x128", s, sets, want, check, best);
    } else {
      try_cutlass<CoopA<false>>("coop 128x256", s, sets, want, check, best);
      try_cutlass<CoopB<false>>("coop 256x128", s, sets, want, check, best);
      try_cutlass<PingA<false>>("pingpong 64x256", s, sets, want, check, best);
      try_cutlass<PingB<false>>("pingpong 128x128", s, sets, want, check, best);
    }
    for (Operands& o : sets) cudaFree(o.x), cudaFree(o.w), cudaFree(o.bias), cudaFree(o.y);
    cudaFree(check.y);
  }
  std::printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
