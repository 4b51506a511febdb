// Batch-1 bf16 GEMV: our kernels against cuBLAS on the decode shapes of
// design.md (LLaMA-7B, low-rank ratio 0.5), inside CUDA graphs, with enough
// weight copies in rotation that L2 cannot serve them. Prints a sweep of
// launch shapes per matrix, then a summary table (last, for short logs) that
// also times the fp32-weight mode (exact checks) of the same matrix. Then the
// grouped launch: the q, k, v second factors as three gemv() calls against one
// gemv_grouped(), back to back (`gemv_bench grouped` runs only that part).
// Last, one decode layer's GEMV chain (LLaMA-7B keep 0.4-0.8, dense), 32
// layers of distinct weights in one graph, as the decode path calls the
// kernels: with automatic plans (also with 4-warp CTAs), then each step's
// launch shape (warps x rows per warp x slices) swept in place
// (`gemv_bench chain` runs only that part).
//
// Built by CMake (bench/kernels/CMakeLists.txt); on the GPU machine (H100/H200),
// after `scripts/gpu_bundle.sh benches` here:
//   build/gpu-bundle/run-bench.sh gemv_bench [grouped | chain]   (only the grouped rows | the layer chain)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/gemv.h"
#include "graph_timing.cuh"

using namespace fsvd::cuda;
using fsvd::bench::hashed_uniform;
using fsvd::bench::relative_diff;
using fsvd::bench::time_per_call;

namespace {

constexpr double kPeakBytesPerSecond = 4.24e12;  // measured H200 copy bandwidth (design.md)
constexpr int kRepeats = 11;                      // graph replays timed; the median is reported
constexpr int kMinLaunchesPerGraph = 200;

enum class Kind { Plain, Residual, SiluInput, Norm, SiluResidual };

struct Shape {
  const char* name;
  int64_t rows, cols;  // of W as launched (gate|up counts both halves)
  Kind kind;
};

const Shape kShapes[] = {
    {"qkv first factor", 3072, 4096, Kind::Plain},
    {"q second factor", 4096, 1024, Kind::Plain},
    {"o first factor", 1024, 4096, Kind::Plain},
    {"gate|up first factor", 2984, 4096, Kind::Plain},
    {"gate second factor", 11008, 1492, Kind::Plain},
    {"down first factor", 1492, 11008, Kind::Plain},
    {"down second factor", 4096, 1492, Kind::Plain},
    {"dense q", 4096, 4096, Kind::Plain},
    {"dense up", 11008, 4096, Kind::Plain},
    // The fused forms the decode path uses (cuBLAS runs the bare GEMV of the same matrix).
    {"norm+qkv first factor", 3072, 4096, Kind::Norm},
    {"norm+gate|up first f.", 2984, 4096, Kind::Norm},
    {"down 1st, x=silu(g)*u", 1492, 11008, Kind::SiluInput},
    {"o second factor +res", 4096, 1024, Kind::Residual},
    {"down second f. +res", 4096, 1492, Kind::Residual},
};

__global__ void fill_bf16(__nv_bfloat16* p, size_t n, uint64_t seed, float scale = 1.0f) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    p[i] = __float2bfloat16(scale * hashed_uniform(i, seed));
}

__global__ void fill_f32(float* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    p[i] = hashed_uniform(i, seed);
}

__global__ void bf16_to_f32(const __nv_bfloat16* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    out[i] = __bfloat162float(in[i]);
}

double percent_of_peak(double bytes, double us) { return 100.0 * bytes / (us * 1e-6) / kPeakBytesPerSecond; }

struct Row {
  std::string name, shape, auto_plan, best_plan;
  double mb, cublas_us, ours_us, ours_pdl_us, ours_f32w_us, best_us, diff;
};

// Products launched together: the second factors [out, rank] of q, k, v.
struct GroupSet {
  const char* name;
  std::vector<std::pair<int64_t, int64_t>> shapes;
};

const GroupSet kGroupSets[] = {
    {"LLaMA-7B q,k,v second", {{4096, 1024}, {4096, 1024}, {4096, 1024}}},
    {"LLaMA-7B gate,up sec.", {{11008, 1492}, {11008, 1492}}},
    {"7B unequal ranks", {{4096, 1024}, {4096, 683}, {4096, 683}}},
    {"Llama-3-8B q,k,v sec.", {{4096, 1024}, {1024, 409}, {1024, 409}}},
};

std::string plan_name(const GemvPlan& p) { return std::to_string(p.warps) + "w x " + std::to_string(p.splits) + "s"; }

// Separate gemv() calls against one gemv_grouped() per set, with and without
// early_weights; x is a slice of one packed fp32 rank-space vector per product,
// as in the decode step.
void run_grouped(const cudaDeviceProp& prop, cudaStream_t stream) {
  std::printf("\nGrouped q,k,v second factors (us per step: 3 gemv() calls or 1 gemv_grouped(); x fp32; "
              "median of %d graph replays; %% of %.2f TB/s)\n", kRepeats, kPeakBytesPerSecond / 1e12);
  std::printf("%-22s %-34s %6s | %8s %8s | %8s %-8s %8s | %8s %-8s %8s | %s\n", "set", "[out, rank] each", "MB",
              "separate", "+PDL", "grouped", "plan", "+PDL", "4 warps", "plan", "+PDL", "check");
  for (const GroupSet& set : kGroupSets) {
    const int count = static_cast<int>(set.shapes.size());
    std::vector<int64_t> ld, w_offset, x_offset;
    int64_t per_copy = 0, packed = 0;
    double bytes = 0;
    std::string shape;
    for (const auto& [rows, cols] : set.shapes) {
      ld.push_back((cols + 7) / 8 * 8);
      w_offset.push_back(per_copy);
      x_offset.push_back(packed);
      per_copy += rows * ld.back();
      packed += cols;
      bytes += double(rows) * cols * 2;
      shape += "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
    }
    const int copies = static_cast<int>(std::max<double>(3, std::ceil(4.0 * prop.l2CacheSize / bytes)));
    const int launches = (kMinLaunchesPerGraph + copies - 1) / copies * copies;
    DeviceBuffer<__nv_bfloat16> w(size_t(per_copy) * copies), x_bf16(packed);
    DeviceBuffer<float> x(packed);
    std::vector<DeviceBuffer<float>> y, y_alone;
    for (const auto& [rows, cols] : set.shapes) {
      y.emplace_back(rows);
      y_alone.emplace_back(rows);
    }
    fill_bf16<<<1024, 256, 0, stream>>>(w.data(), w.size(), 3);
    fill_bf16<<<64, 256, 0, stream>>>(x_bf16.data(), x_bf16.size(), 4);
    bf16_to_f32<<<64, 256, 0, stream>>>(x_bf16.data(), x.data(), x.size());
    FSVD_CUDA_CHECK(cudaGetLastError());
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));

    auto groups = [&](int copy, std::vector<DeviceBuffer<float>>& out) {
      std::vector<GemvGroup> g;
      for (int i = 0; i < count; ++i)
        g.push_back({{w.data() + size_t(copy % copies) * per_copy + w_offset[i], set.shapes[i].first,
                      set.shapes[i].second, ld[i]},
                     DeviceVec::f32(x.data() + x_offset[i]),
                     {out[i].data()}});
      return g;
    };
    auto separate = [&](int copy, GemvConfig cfg, std::vector<DeviceBuffer<float>>& out) {
      for (const GemvGroup& g : groups(copy, out)) gemv(g.w, g.x, g.y, 1, stream, cfg);
    };
    auto grouped = [&](int copy, GemvConfig cfg) {
      const std::vector<GemvGroup> g = groups(copy, y);
      gemv_grouped(g.data(), count, 1, stream, cfg);
    };
    const double sep = time_per_call(stream, launches, kRepeats, [&](int i) { separate(i, {}, y_alone); });
    const double sep_pdl = time_per_call(stream, launches, kRepeats, [&](int i) { separate(i, {0, 0, true}, y_alone); });
    const double grp = time_per_call(stream, launches, kRepeats, [&](int i) { grouped(i, {}); });
    const double grp_pdl = time_per_call(stream, launches, kRepeats, [&](int i) { grouped(i, {0, 0, true}); });
    const double grp4 = time_per_call(stream, launches, kRepeats, [&](int i) { grouped(i, {4, 0}); });
    const double grp4_pdl = time_per_call(stream, launches, kRepeats, [&](int i) { grouped(i, {4, 0, true}); });
    const std::vector<GemvGroup> g0 = groups(0, y);
    const GemvPlan plan = plan_gemv_grouped(g0.data(), count, 1, {}, prop.multiProcessorCount);
    const GemvPlan plan4 = plan_gemv_grouped(g0.data(), count, 1, {4, 0}, prop.multiProcessorCount);

    // Check: bitwise equal to the separate calls with the grouped launch's own shape.
    const GemvConfig same{plan.warps, plan.splits};
    grouped(0, same);
    separate(0, same, y_alone);
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
    bool equal = true;
    for (int i = 0; i < count; ++i) {
      const std::vector<float> a = y[i].download(), b = y_alone[i].download();
      equal = equal && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    }
    std::printf("%-22s %-34s %6.1f | %8.2f %8.2f | %8.2f %-8s %8.2f | %8.2f %-8s %8.2f | %s; best %.1f%% of peak\n",
                set.name, shape.c_str(), bytes / 1e6, sep, sep_pdl, grp, plan_name(plan).c_str(), grp_pdl, grp4,
                plan_name(plan4).c_str(), grp4_pdl, equal ? "bitwise = separate" : "DIFFERS",
                percent_of_peak(bytes, std::min({grp, grp_pdl, grp4, grp4_pdl})));
  }
}

// One layer's GEMVs as the decode step calls them (attention left out); each
// reads the previous one's output. `parts` > 1: a grouped launch of that many
// equal products [rows / parts, cols], each reading its own cols-wide slice
// of the input (the q, k, v or gate, up second factors).
struct ChainStep {
  const char* name;
  int64_t rows, cols;
  Kind kind;
  int parts = 1;
};
struct ChainLayer {
  std::string name;
  std::vector<ChainStep> steps;
};

// A LLaMA-7B layer at a kept ratio: attention factors of rank ra, MLP factors
// of rank rm (flashsvd bench --synthetic llama-7b --ratio keep); packed first
// factors start each part at a multiple of 8 rows.
ChainLayer low_rank_layer(const std::string& keep, int64_t ra, int64_t rm) {
  return {"LLaMA-7B keep " + keep,
          {{"q|k|v first", 3 * round_up8(ra), 4096, Kind::Norm},
           {"q, k, v second", 3 * 4096, ra, Kind::Plain, 3},
           {"o first", ra, 4096, Kind::Plain},
           {"o second", 4096, ra, Kind::Residual},
           {"gate|up first", 2 * round_up8(rm), 4096, Kind::Norm},
           {"gate, up second", 2 * 11008, rm, Kind::Plain, 2},
           {"down first", rm, 11008, Kind::SiluInput},
           {"down second", 4096, rm, Kind::Residual}}};
}

// keep 0.4 decoded slower than 0.5 until the planner's rules of session 10
// (gemv_notes.md); 0.6-0.8 are swept for the same kind of trap.
const ChainLayer kChains[] = {
    low_rank_layer("0.5", 1024, 1492),
    low_rank_layer("0.4", 819, 1194),
    low_rank_layer("0.6", 1228, 1791),
    low_rank_layer("0.7", 1433, 2089),
    low_rank_layer("0.8", 1638, 2388),
    {"LLaMA-7B dense",
     {{"q|k|v", 3 * 4096, 4096, Kind::Norm},
      {"o", 4096, 4096, Kind::Residual},
      {"gate|up", 2 * 11008, 4096, Kind::Norm},
      {"down", 4096, 11008, Kind::SiluResidual}}},
};

// The layer chain of `layer` over 32 layers of distinct weights in one graph,
// every call with early_weights: us per layer for per-step launch configs.
class Chain {
 public:
  static constexpr int kLayers = 32;

  Chain(const ChainLayer& layer, cudaStream_t stream) : layer_(layer), stream_(stream) {
    for (int l = 0; l < kLayers; ++l)
      for (size_t s = 0; s < steps(); ++s) {
        const ChainStep& st = layer.steps[s];
        w_.emplace_back(size_t(st.rows) * ld(st));
        // Scaled so that values stay finite along the chain.
        fill_bf16<<<1024, 256, 0, stream>>>(w_.back().data(), w_.back().size(), 17 * l + s,
                                            1.0f / std::sqrt(float(st.cols)));
        if (l == 0) bytes_ += 2.0 * st.rows * st.cols;
      }
    for (int i = 0; i < 2; ++i) fill_f32<<<64, 256, 0, stream>>>(act_[i].data(), act_[i].size(), 1 + i);
    fill_f32<<<64, 256, 0, stream>>>(gain_.data(), gain_.size(), 3);
    FSVD_CUDA_CHECK(cudaGetLastError());
  }

  size_t steps() const { return layer_.steps.size(); }
  double floor_us() const { return bytes_ / kPeakBytesPerSecond * 1e6; }
  double bytes() const { return bytes_; }

  // us per layer; cfgs[s] is step s's config (early_weights is forced on).
  double us(std::vector<GemvConfig> cfgs) const {
    for (GemvConfig& c : cfgs) c.early_weights = true;
    const int n = static_cast<int>(steps());
    return n * time_per_call(stream_, kLayers * n, kRepeats, [&](int i) {
      const int s = i % n;
      call(i / n, s, cfgs[s], act_[i % 2].data(), act_[(i + 1) % 2].data());
    });
  }

 private:
  static int64_t ld(const ChainStep& st) { return (st.cols + 7) / 8 * 8; }

  void call(int l, int s, GemvConfig cfg, const float* x, float* y) const {
    const ChainStep& st = layer_.steps[s];
    const DeviceMatrix m{w_[l * steps() + s].data(), st.rows, st.cols, ld(st)};
    switch (st.kind) {
      case Kind::Norm: rmsnorm_gemv(m, DeviceVec::f32(x), gain_.data(), 1e-5f, {y}, 1, stream_, cfg); break;
      case Kind::SiluInput: gemv(m, DeviceVec::silu_mul(x, x + st.cols), {y}, 1, stream_, cfg); break;
      case Kind::SiluResidual: gemv_residual(m, DeviceVec::silu_mul(x, x + st.cols), {y}, 1, stream_, cfg); break;
      case Kind::Residual: gemv_residual(m, DeviceVec::f32(x), {y}, 1, stream_, cfg); break;
      case Kind::Plain:
        if (st.parts == 1) {
          gemv(m, DeviceVec::f32(x), {y}, 1, stream_, cfg);
        } else {
          GemvGroup g[kMaxGemvGroups];
          const int64_t rows = st.rows / st.parts;
          const auto* base = static_cast<const __nv_bfloat16*>(m.data);
          for (int i = 0; i < st.parts; ++i)
            g[i] = {DeviceMatrix{base + size_t(i) * rows * m.ld, rows, m.cols, m.ld}, DeviceVec::f32(x + i * st.cols),
                    {y + i * rows}};
          gemv_grouped(g, st.parts, 1, stream_, cfg);
        }
        break;
    }
  }

  const ChainLayer& layer_;
  cudaStream_t stream_;
  std::vector<DeviceBuffer<__nv_bfloat16>> w_;
  DeviceBuffer<float> act_[2] = {DeviceBuffer<float>(65536), DeviceBuffer<float>(65536)};
  DeviceBuffer<float> gain_{8192};
  double bytes_ = 0;
};

std::string config_name(const GemvConfig& c) {
  auto part = [](int v) { return v == 0 ? std::string("a") : std::to_string(v); };
  return part(c.rows_per_warp) + "r" + part(c.warps) + "w" + part(c.splits) + "s";
}

// Each chain with automatic plans (twice), then, step by step, the chain with
// that step's launch shape swept over rows per warp x slices (the other steps
// automatic): the shape that makes the layer fastest is the step's best,
// measured where it matters, between its real neighbours.
void run_chain(const cudaDeviceProp& prop, cudaStream_t stream) {
  for (const ChainLayer& layer : kChains) {
    const Chain chain(layer, stream);
    const std::vector<GemvConfig> automatic(chain.steps());
    std::printf("\nLayer chain, %s GEMVs (%.1f MB a layer, floor %.2f us), %d layers in one graph, "
                "early_weights; us per layer\n", layer.name.c_str(), chain.bytes() / 1e6, chain.floor_us(), Chain::kLayers);
    const double base = chain.us(automatic);
    std::printf("automatic plans: %.2f us (%.0f%% of floor), again %.2f us\n", base,
                100 * chain.floor_us() / base, chain.us(automatic));
    const std::vector<GemvConfig> four_warps(chain.steps(), GemvConfig{4, 0, true});
    std::printf("automatic plans with 4-warp CTAs: %.2f us, again %.2f us\n", chain.us(four_warps),
                chain.us(four_warps));
    std::vector<GemvConfig> best_cfgs = automatic;
    for (size_t s = 0; s < chain.steps(); ++s) {
      const ChainStep& st = layer.steps[s];
      GemvGroup parts[kMaxGemvGroups];
      for (int i = 0; i < st.parts; ++i) parts[i].w = DeviceMatrix{nullptr, st.rows / st.parts, st.cols, st.cols};
      const GemvFusion fusion = st.kind == Kind::Norm ? GemvFusion::RmsNorm
                                : st.kind == Kind::SiluInput || st.kind == Kind::SiluResidual ? GemvFusion::SiluMul
                                                                                              : GemvFusion::None;
      const GemvConfig pdl{0, 0, true};
      const GemvPlan plan = st.parts > 1 ? plan_gemv_grouped(parts, st.parts, 1, pdl, prop.multiProcessorCount)
                                         : plan_gemv(st.rows, st.cols, 1, pdl, prop.multiProcessorCount,
                                                     ElementType::BF16, fusion);
      std::printf("%-16s [%lld, %lld]%s auto %dr%dw%ds:", st.name, static_cast<long long>(st.rows / st.parts),
                  static_cast<long long>(st.cols), st.parts > 1 ? " grouped" : "", plan.rows_per_warp, plan.warps,
                  plan.splits);
      double best = base;
      std::string best_name = "auto";
      for (int warps : {4, 8})
        for (int rows : {2, 4})
          for (int splits : {1, 2, 4, 8}) {
            std::vector<GemvConfig> cfgs = automatic;
            cfgs[s] = GemvConfig{warps, splits, true, rows};
            const GemvPlan p = plan_gemv_grouped(parts, st.parts, 1, cfgs[s], prop.multiProcessorCount);
            if (p.splits != splits) continue;  // the columns give fewer slices: same as a smaller request
            const double t = chain.us(cfgs);
            std::printf(" %s %.2f", config_name(cfgs[s]).c_str(), t);
            if (t < best) best = t, best_name = config_name(cfgs[s]), best_cfgs[s] = cfgs[s];
          }
      std::printf(" | best %s (%+.2f us)\n", best_name.c_str(), best - base);
    }
    const double all_best = chain.us(best_cfgs);
    std::printf("every step at its best: %.2f us (%.0f%% of floor)\n", all_best, 100 * chain.floor_us() / all_best);
  }
}

int run(bool grouped_only, bool chain_only) {
  int device = 0;
  cudaDeviceProp prop{};
  FSVD_CUDA_CHECK(cudaGetDevice(&device));
  FSVD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("device %s: %d SMs, L2 %.0f MB, peak used for %%: %.2f TB/s\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize / 1e6, kPeakBytesPerSecond / 1e12);

  cudaStream_t stream;
  FSVD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle;
  FSVD_CUDA_CHECK(cublasCreate(&handle));
  FSVD_CUDA_CHECK(cublasSetStream(handle, stream));
  DeviceBuffer<char> cublas_ws(32 << 20);  // graph capture must not allocate
  FSVD_CUDA_CHECK(cublasSetWorkspace(handle, cublas_ws.data(), cublas_ws.bytes()));

  if (grouped_only || chain_only) {
    if (grouped_only) run_grouped(prop, stream);
    else run_chain(prop, stream);
    FSVD_CUDA_CHECK(cublasDestroy(handle));
    FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
  }
  std::vector<Row> rows;
  for (const Shape& s : kShapes) {
    const int64_t ld = (s.cols + 7) / 8 * 8;
    const double bytes = double(s.rows) * s.cols * 2;
    const int copies = static_cast<int>(std::max<double>(3, std::ceil(4.0 * prop.l2CacheSize / bytes)));
    const int launches = (kMinLaunchesPerGraph + copies - 1) / copies * copies;
    const size_t per_copy = size_t(s.rows) * ld;

    DeviceBuffer<__nv_bfloat16> w(per_copy * copies), x_bf16(2 * s.cols);
    DeviceBuffer<float> x_f32(2 * s.cols), gain(s.cols), y(s.rows), y_ref(s.rows);
    fill_bf16<<<1024, 256, 0, stream>>>(w.data(), w.size(), 1);
    fill_bf16<<<64, 256, 0, stream>>>(x_bf16.data(), x_bf16.size(), 2);
    bf16_to_f32<<<64, 256, 0, stream>>>(x_bf16.data(), x_f32.data(), x_f32.size());
    {
      std::vector<float> ones(s.cols, 1.0f);
      gain.upload(ones);
    }
    FSVD_CUDA_CHECK(cudaGetLastError());
    FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));

    auto matrix = [&](int i) { return DeviceMatrix{w.data() + size_t(i % copies) * per_copy, s.rows, s.cols, ld}; };
    const auto* xb = x_bf16.data();
    auto run = [&](const DeviceMatrix& m, GemvConfig cfg) {
      const DeviceVec x = DeviceVec::f32(x_f32.data());
      switch (s.kind) {
        case Kind::Plain: gemv(m, x, {y.data()}, 1, stream, cfg); break;
        case Kind::Residual: gemv_residual(m, x, {y.data()}, 1, stream, cfg); break;
        case Kind::SiluInput:
          gemv(m, DeviceVec::silu_mul(x_f32.data(), x_f32.data() + s.cols), {y.data()}, 1, stream, cfg);
          break;
        case Kind::SiluResidual:
          gemv_residual(m, DeviceVec::silu_mul(x_f32.data(), x_f32.data() + s.cols), {y.data()}, 1, stream, cfg);
          break;
        case Kind::Norm: rmsnorm_gemv(m, DeviceVec::f32(x_f32.data()), gain.data(), 1e-5f, {y.data()}, 1, stream, cfg); break;
      }
    };
    auto ours = [&](int i, GemvConfig cfg) { run(matrix(i), cfg); };
    const float one = 1.0f, zero = 0.0f;
    auto cublas = [&](int i) {
      FSVD_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(s.rows), 1, int(s.cols), &one,
                                   matrix(i).data, CUDA_R_16BF, int(ld), xb, CUDA_R_16BF, int(s.cols),
                                   s.kind == Kind::Residual ? &one : &zero, y_ref.data(), CUDA_R_32F,
                                   int(s.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };

    Row r;
    r.name = s.name;
    r.shape = "[" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]";
    r.mb = bytes / 1e6;
    const GemvPlan plan = plan_gemv(s.rows, s.cols, 1, {}, prop.multiProcessorCount);
    r.auto_plan = std::to_string(plan.warps) + "w x " + std::to_string(plan.splits) + "s";
    r.cublas_us = time_per_call(stream, launches, kRepeats, cublas);
    r.ours_us = time_per_call(stream, launches, kRepeats, [&](int i) { ours(i, {}); });
    r.ours_pdl_us = time_per_call(stream, launches, kRepeats, [&](int i) { ours(i, {0, 0, true}); });
    {
      // The fp32-weight mode: twice the bytes, as many copies as keep L2 out.
      const int64_t ld32 = (s.cols + 3) / 4 * 4;
      const size_t per_copy32 = size_t(s.rows) * ld32;
      const int copies32 = static_cast<int>(std::max<double>(3, std::ceil(2.0 * prop.l2CacheSize / bytes)));
      const int launches32 = (kMinLaunchesPerGraph + copies32 - 1) / copies32 * copies32;
      DeviceBuffer<float> w32(per_copy32 * copies32);
      fill_f32<<<1024, 256, 0, stream>>>(w32.data(), w32.size(), 1);
      FSVD_CUDA_CHECK(cudaGetLastError());
      r.ours_f32w_us = time_per_call(stream, launches32, kRepeats, [&](int i) {
        run({w32.data() + size_t(i % copies32) * per_copy32, s.rows, s.cols, ld32, ElementType::F32}, {});
      });
    }

    // Same matrix, same input: ours against cuBLAS (plain GEMVs only; the fused
    // epilogues are checked against the CPU in tests/backends/cuda).
    r.diff = NAN;
    if (s.kind == Kind::Plain) {
      ours(0, {});
      cublas(0);
      FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
      r.diff = relative_diff(y.download(), y_ref.download());
    }

    std::printf("\n%s %s, %.1f MB, %d copies, %d launches/graph; cuBLAS %.2f us\n", s.name, r.shape.c_str(),
                r.mb, copies, launches, r.cublas_us);
    std::printf("  warps splits chunk  tiles  CTAs     us   %%peak\n");
    r.best_us = INFINITY;
    std::vector<std::pair<int, int>> seen;
    for (int warps : {2, 4, 8})
      for (int splits : {1, 2, 3, 4, 5, 6, 7, 8}) {
        const GemvPlan p = plan_gemv(s.rows, s.cols, 1, {warps, splits}, prop.multiProcessorCount);
        if (std::find(seen.begin(), seen.end(), std::make_pair(warps, p.splits)) != seen.end()) continue;
        seen.emplace_back(warps, p.splits);
        const double us = time_per_call(stream, launches, kRepeats, [&](int i) { ours(i, {warps, splits}); });
        std::printf("  %5d %6d %5d %6d %5d %6.2f %6.1f%s\n", warps, p.splits, p.chunk_cols, p.tiles,
                    p.tiles * p.splits, us, percent_of_peak(bytes, us),
                    warps == plan.warps && p.splits == plan.splits ? "  <- auto" : "");
        if (us < r.best_us) {
          r.best_us = us;
          r.best_plan = std::to_string(warps) + "w x " + std::to_string(p.splits) + "s";
        }
      }
    rows.push_back(r);
  }

  std::printf("\nSummary (us per call inside a CUDA graph, median of %d replays; %% of %.2f TB/s; x fp32 "
              "(cuBLAS: the same values in bf16); +PDL: early_weights, back-to-back calls overlap; best: sweep without PDL; "
              "W fp32: fp32 weights (2x the MB), automatic plan, %% of their bytes)\n",
              kRepeats, kPeakBytesPerSecond / 1e12);
  std::printf("%-22s %-14s %6s | %7s %5s | %7s %5s %-9s | %7s %5s | %7s %-9s | %7s %5s | %s\n", "matrix",
              "[out, in]", "MB", "cuBLAS", "%", "ours", "%", "plan", "+PDL", "%", "best", "plan", "W fp32", "%",
              "rel.diff vs cuBLAS");
  for (const Row& r : rows)
    std::printf("%-22s %-14s %6.1f | %7.2f %5.1f | %7.2f %5.1f %-9s | %7.2f %5.1f | %7.2f %-9s | %7.2f %5.1f | "
                "%.1e\n",
                r.name.c_str(), r.shape.c_str(), r.mb, r.cublas_us, percent_of_peak(r.mb * 1e6, r.cublas_us),
                r.ours_us, percent_of_peak(r.mb * 1e6, r.ours_us), r.auto_plan.c_str(), r.ours_pdl_us,
                percent_of_peak(r.mb * 1e6, r.ours_pdl_us), r.best_us, r.best_plan.c_str(),
                r.ours_f32w_us, percent_of_peak(2 * r.mb * 1e6, r.ours_f32w_us), r.diff);
  run_grouped(prop, stream);
  run_chain(prop, stream);
  FSVD_CUDA_CHECK(cublasDestroy(handle));
  FSVD_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const bool part = argc > 1;
    return run(part && std::strcmp(argv[1], "grouped") == 0, part && std::strcmp(argv[1], "chain") == 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemv_bench: %s\n", e.what());
    return 1;
  }
}
