// Batched GEMV (src/backends/cuda/gemv.cu) against cuBLASLt (Gemm::run as
// prefill uses it: bf16 x, fp32 y) at LLaMA-7B's decode shapes, keep 0.5 and
// dense, for B = 1..64 input vectors: where a batched decode step should
// switch from the GEMV to the GEMM. The GEMM is timed with the launch that
// stages fp32 x to bf16 for it (stage_bf16), and alone. Every call is timed
// inside a CUDA graph of >= 200 calls rotating over >= 4x L2 of weight copies
// (each call reads W from HBM, as a decode step does), median of 11 replays;
// GB/s counts weight bytes only. Then (`sweep`) each shape's launch shapes
// (rows per warp x slices) at B = 2..16 against the automatic plan, and
// (`fused`) the decode step's fused forms at B = 1..16.
//
// Built by CMake (bench/kernels/CMakeLists.txt); on the GPU machine, after
// `scripts/gpu_bundle.sh benches` here:
//   build/gpu-bundle/run-bench.sh gemv_batch_bench [switch | sweep | fused]
//   build/gpu-bundle/run-bench.sh gemv_batch_bench profile SHAPE B [ROWS_PER_WARP SPLITS]
// `profile` launches one shape's GEMV (kShapes[SHAPE]) three times outside a
// graph, for a profiler: ncu -k regex:gemv_kernel --launch-skip 2 --launch-count 1.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemv.h"
#include "graph_timing.cuh"

using namespace fsvd::cuda;
using fsvd::bench::hashed_uniform;
using fsvd::bench::relative_diff;
using fsvd::bench::time_per_call;

namespace {

constexpr int kRepeats = 11;  // graph replays timed; the median is reported
constexpr int kMinLaunchesPerGraph = 200;
constexpr int kMostVectors = 64;
const int kBatches[] = {1, 2, 4, 8, 16, 32, 64};

struct Shape {
  const char* name;
  int64_t rows, cols;
};

// Keep 0.5: ranks 1024 (attention) and 1492 (MLP), packed first factors
// with each part rounded up to 8 rows, as the decode step launches them.
const Shape kShapes[] = {
    {"keep0.5 q|k|v first", 3072, 4096}, {"keep0.5 q second", 4096, 1024},
    {"keep0.5 o first", 1024, 4096},     {"keep0.5 gate|up first", 2992, 4096},
    {"keep0.5 gate second", 11008, 1492}, {"keep0.5 down first", 1492, 11008},
    {"keep0.5 down second", 4096, 1492}, {"dense q|k|v", 12288, 4096},
    {"dense o", 4096, 4096},             {"dense gate|up", 22016, 4096},
    {"dense down", 4096, 11008},
};

template <typename T>
__global__ void fill(T* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    p[i] = T(hashed_uniform(i, seed));
}

std::string plan_name(const GemvPlan& p) {
  return std::to_string(p.rows_per_warp) + "r" + std::to_string(p.warps) + "w" + std::to_string(p.splits) + "s";
}

// One shape's weight copies (enough that L2 cannot serve them) and the
// input and output vectors of up to kMostVectors sequences.
class Operands {
 public:
  Operands(const Shape& s, const cudaDeviceProp& prop, cudaStream_t stream)
      : shape_(s), ld_(round_up8(s.cols)), bytes_(2.0 * s.rows * s.cols),
        copies_(static_cast<int>(std::max<double>(3, std::ceil(4.0 * prop.l2CacheSize / bytes_)))),
        launches_((kMinLaunchesPerGraph + copies_ - 1) / copies_ * copies_),
        w_(size_t(s.rows) * ld_ * copies_), x_(kMostVectors * ld_), up_(kMostVectors * ld_),
        gain_(ld_), xb_(kMostVectors * ld_), y_(kMostVectors * s.rows), y_gemm_(kMostVectors * s.rows) {
    fill<<<1024, 256, 0, stream>>>(w_.data(), w_.size(), 1);
    fill<<<64, 256, 0, stream>>>(x_.data(), x_.size(), 2);
    fill<<<64, 256, 0, stream>>>(up_.data(), up_.size(), 3);
    fill<<<64, 256, 0, stream>>>(gain_.data(), gain_.size(), 4);
    FSVD_CUDA_CHECK(cudaGetLastError());
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  double bytes() const { return bytes_; }
  int launches() const { return launches_; }
  // The i-th call's weights: copy i mod copies.
  DeviceMatrix w(int i) const {
    return {w_.data() + size_t(i % copies_) * shape_.rows * ld_, shape_.rows, shape_.cols, ld_};
  }
  DeviceVec x() const { return DeviceVec::f32(x_.data(), ld_); }
  DeviceVec silu_x() const { return DeviceVec::silu_mul(x_.data(), up_.data(), ld_); }
  const float* gain() const { return gain_.data(); }
  DeviceOut y() const { return {y_.data(), shape_.rows}; }
  // y_gemm = x · Wᵀ for the first n vectors through cuBLASLt, x staged to bf16 first when `stage`.
  void gemm(Gemm& g, int i, int n, bool stage, cudaStream_t stream) const {
    if (stage) {
      const StageSegment all{0, shape_.cols, 0};
      stage_bf16(x_.data(), ld_, n, &all, 1, xb_.data(), ld_, stream);
    }
    g.run(padded_k(w(i)), xb_.data(), ld_, n, y_gemm_.data(), shape_.rows, ElementType::F32);
  }
  // ||ours - cuBLASLt|| / ||cuBLASLt|| over the first n vectors (the GEMM's x rounded to bf16).
  double difference(int n) const {
    const std::vector<float> a = y_.download(), b = y_gemm_.download();
    return relative_diff(std::vector<float>(a.begin(), a.begin() + n * shape_.rows),
                         std::vector<float>(b.begin(), b.begin() + n * shape_.rows));
  }

 private:
  Shape shape_;
  int64_t ld_;
  double bytes_;
  int copies_, launches_;
  DeviceBuffer<__nv_bfloat16> w_;
  DeviceBuffer<float> x_, up_, gain_;
  DeviceBuffer<__nv_bfloat16> xb_;
  DeviceBuffer<float> y_, y_gemm_;
};

double gbps(double bytes, double us) { return bytes / (us * 1e-6) / 1e9; }

// Our GEMV (batches up to kMaxBatch; without and with early weights) against
// the GEMM with and without its staging, per shape and batch; then the
// switch points.
void run_switch(const cudaDeviceProp& prop, cudaStream_t stream) {
  std::printf("\nSwitch point: us per call (GB/s of weight bytes); ours: automatic plan, +PDL: early_weights "
              "(back to back, as the decode step runs); GEMM: Gemm::run (cuBLASLt, bf16 x, fp32 y), +stage: with "
              "the stage_bf16 launch of x before it\n");
  std::printf("%-22s %-14s %5s %3s | %8s %7s %-8s | %8s %7s | %8s %7s | %8s %7s | %s\n", "matrix", "[out, in]", "MB",
              "B", "ours", "GB/s", "plan", "+PDL", "GB/s", "GEMM", "GB/s", "+stage", "GB/s", "rel.diff");
  Gemm gemm(stream);
  std::vector<std::string> summary;
  for (const Shape& s : kShapes) {
    const Operands ops(s, prop, stream);
    int switch_at = 0;  // the first B where GEMM + staging beats ours + PDL
    for (int b : kBatches) {
      const bool ours_ok = b <= gemv_limits::kMaxBatch;
      double ours = NAN, ours_pdl = NAN, diff = NAN;
      std::string plan = "-";
      if (ours_ok) {
        ours = time_per_call(stream, ops.launches(), kRepeats, [&](int i) { gemv(ops.w(i), ops.x(), ops.y(), b, stream); });
        ours_pdl = time_per_call(stream, ops.launches(), kRepeats, [&](int i) { gemv(ops.w(i), ops.x(), ops.y(), b, stream, {0, 0, true}); });
        plan = plan_name(plan_gemv(s.rows, s.cols, b, {0, 0, true}, prop.multiProcessorCount));
      }
      ops.gemm(gemm, 0, b, true, stream);  // cuBLASLt's plan for the problem, made outside the graph
      const double alone = time_per_call(stream, ops.launches(), kRepeats, [&](int i) { ops.gemm(gemm, i, b, false, stream); });
      const double staged = time_per_call(stream, ops.launches(), kRepeats, [&](int i) { ops.gemm(gemm, i, b, true, stream); });
      if (ours_ok) {
        gemv(ops.w(0), ops.x(), ops.y(), b, stream);
        ops.gemm(gemm, 0, b, true, stream);
        FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
        diff = ops.difference(b);
      }
      if (switch_at == 0 && (!ours_ok || staged < ours_pdl)) switch_at = b;
      std::printf("%-22s %-14s %5.1f %3d | %8.2f %7.0f %-8s | %8.2f %7.0f | %8.2f %7.0f | %8.2f %7.0f | %.1e\n", s.name,
                  ("[" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]").c_str(), ops.bytes() / 1e6, b,
                  ours, gbps(ops.bytes(), ours), plan.c_str(), ours_pdl, gbps(ops.bytes(), ours_pdl), alone,
                  gbps(ops.bytes(), alone), staged, gbps(ops.bytes(), staged), diff);
    }
    summary.push_back(std::string(s.name) + ": GEMM + staging first faster at B = " + std::to_string(switch_at) +
                      (switch_at > gemv_limits::kMaxBatch ? " (past the GEMV's batch limit)" : ""));
  }
  std::printf("\nSwitch points (B from %s):\n", "1, 2, 4, 8, 16, 32, 64");
  for (const std::string& line : summary) std::printf("  %s\n", line.c_str());
}

// Each shape's launch shapes at B = 2..16, early weights on: rows per warp x
// slices (8 warps), against the automatic plan.
void run_sweep(const cudaDeviceProp& prop, cudaStream_t stream) {
  std::printf("\nLaunch shapes at batch B (us per call, +PDL; rows per warp r, warps w, slices s)\n");
  for (const Shape& s : kShapes) {
    const Operands ops(s, prop, stream);
    for (int b : {2, 4, 8, 16}) {
      const GemvConfig pdl{0, 0, true};
      const GemvPlan plan = plan_gemv(s.rows, s.cols, b, pdl, prop.multiProcessorCount);
      const double automatic =
          time_per_call(stream, ops.launches(), kRepeats, [&](int i) { gemv(ops.w(i), ops.x(), ops.y(), b, stream, pdl); });
      std::printf("%-22s B=%-2d auto %s %.2f:", s.name, b, plan_name(plan).c_str(), automatic);
      double best = automatic;
      std::string best_name = "auto";
      for (int rows : {2, 4})
        for (int splits : {1, 2, 4, 8}) {
          const GemvConfig cfg{8, splits, true, rows};
          const GemvPlan p = plan_gemv(s.rows, s.cols, b, cfg, prop.multiProcessorCount);
          if (p.splits != splits) continue;  // the columns give fewer slices: same as a smaller request
          const double us =
              time_per_call(stream, ops.launches(), kRepeats, [&](int i) { gemv(ops.w(i), ops.x(), ops.y(), b, stream, cfg); });
          std::printf(" %s %.2f", plan_name(p).c_str(), us);
          if (us < best) best = us, best_name = plan_name(p);
        }
      std::printf(" | best %s (%+.2f us)\n", best_name.c_str(), best - automatic);
    }
  }
}

// The decode step's fused forms at B = 1..16 (automatic plans, early weights):
// us per call, and what the same product costs plain.
void run_fused(const cudaDeviceProp& prop, cudaStream_t stream) {
  enum class Form { Norm, Silu, Residual, Grouped };
  struct Fused {
    const char* name;
    Shape shape;
    Form form;
    int parts = 1;  // grouped: that many products [rows, cols] reading their own slices
  };
  const Fused kFused[] = {
      {"rmsnorm + q|k|v first", {"", 3072, 4096}, Form::Norm},
      {"rmsnorm + gate|up first", {"", 2992, 4096}, Form::Norm},
      {"down first, silu(g)*u", {"", 1492, 11008}, Form::Silu},
      {"o second + residual", {"", 4096, 1024}, Form::Residual},
      {"down second + residual", {"", 4096, 1492}, Form::Residual},
      {"q, k, v second grouped", {"", 4096, 1024}, Form::Grouped, 3},
      {"gate, up second grouped", {"", 11008, 1492}, Form::Grouped, 2},
  };
  const GemvConfig pdl{0, 0, true};
  std::printf("\nFused forms, +PDL (us per call: fused / plain, the same weights; grouped: one launch against one "
              "gemv() per product)\n%-24s %-14s", "form", "[out, in]");
  for (int b : {1, 2, 4, 8, 16}) std::printf(" | B=%-2d fused   plain", b);
  std::printf("\n");
  for (const Fused& f : kFused) {
    // Grouped: the parts side by side in W's rows and in x, each from a 16-byte boundary.
    const int64_t stride = round_up8(f.shape.cols);
    const Shape s{f.name, f.shape.rows, f.parts == 1 ? f.shape.cols : stride * f.parts};
    const Operands ops(s, prop, stream);
    std::printf("%-24s %-14s", f.name,
                ("[" + std::to_string(f.shape.rows) + ", " + std::to_string(f.shape.cols) + "]").c_str());
    for (int b : {1, 2, 4, 8, 16}) {
      // Part p: columns [p * stride, p * stride + cols) of W's rows, and of x.
      auto part = [&](int i, int p) {
        DeviceMatrix m = ops.w(i);
        m.data = static_cast<const __nv_bfloat16*>(m.data) + p * stride;
        m.cols = f.shape.cols;
        return m;
      };
      auto part_x = [&](int p) {
        DeviceVec x = ops.x();
        x.data = static_cast<const float*>(x.data) + p * stride;
        return x;
      };
      auto part_y = [&](int p) { return DeviceOut{ops.y().data + p * f.shape.rows, f.parts * f.shape.rows}; };
      const double fused = time_per_call(stream, ops.launches(), kRepeats, [&](int i) {
        switch (f.form) {
          case Form::Norm: rmsnorm_gemv(ops.w(i), ops.x(), ops.gain(), 1e-5f, ops.y(), b, stream, pdl); break;
          case Form::Silu: gemv(ops.w(i), ops.silu_x(), ops.y(), b, stream, pdl); break;
          case Form::Residual: gemv_residual(ops.w(i), ops.x(), ops.y(), b, stream, pdl); break;
          case Form::Grouped: {
            GemvGroup g[kMaxGemvGroups];
            for (int p = 0; p < f.parts; ++p) g[p] = {part(i, p), part_x(p), part_y(p)};
            gemv_grouped(g, f.parts, b, stream, pdl);
            break;
          }
        }
      });
      const double plain = time_per_call(stream, ops.launches(), kRepeats, [&](int i) {
        for (int p = 0; p < f.parts; ++p) gemv(part(i, p), part_x(p), part_y(p), b, stream, pdl);
      });
      std::printf(" | %8.2f %7.2f", fused, plain);
    }
    std::printf("\n");
  }
}

void run_profile(const cudaDeviceProp& prop, cudaStream_t stream, int shape, int batch, GemvConfig cfg) {
  const Shape& s = kShapes[shape];
  const Operands ops(s, prop, stream);
  const GemvPlan plan = plan_gemv(s.rows, s.cols, batch, cfg, prop.multiProcessorCount);
  for (int i = 0; i < 3; ++i) gemv(ops.w(i), ops.x(), ops.y(), batch, stream, cfg);
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::printf("profiled %s [%lld, %lld] B=%d plan %s\n", s.name, static_cast<long long>(s.rows),
              static_cast<long long>(s.cols), batch, plan_name(plan).c_str());
}

int run(int argc, char** argv) {
  const char* part = argc > 1 ? argv[1] : nullptr;
  int device = 0;
  cudaDeviceProp prop{};
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("device %s: %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6);
  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (part && std::strcmp(part, "profile") == 0) {
    const int count = static_cast<int>(std::size(kShapes));
    const int shape = argc > 2 ? std::atoi(argv[2]) : -1, batch = argc > 3 ? std::atoi(argv[3]) : 0;
    if (shape < 0 || shape >= count || batch < 1 || batch > gemv_limits::kMaxBatch)
      throw std::runtime_error("profile SHAPE B [ROWS_PER_WARP SPLITS]: SHAPE 0.." + std::to_string(count - 1) +
                               ", B 1.." + std::to_string(gemv_limits::kMaxBatch));
    const GemvConfig cfg{argc > 5 ? 8 : 0, argc > 5 ? std::atoi(argv[5]) : 0, false, argc > 4 ? std::atoi(argv[4]) : 0};
    run_profile(prop, stream, shape, batch, cfg);
    FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
  }
  const bool all = part == nullptr;
  if (all || std::strcmp(part, "switch") == 0) run_switch(prop, stream);
  if (all || std::strcmp(part, "sweep") == 0) run_sweep(prop, stream);
  if (all || std::strcmp(part, "fused") == 0) run_fused(prop, stream);
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemv_batch_bench: %s\n", e.what());
    return 1;
  }
}
