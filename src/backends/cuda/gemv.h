#pragma once
// Batch-1 GEMV for decode: y[rows] = W[rows, cols] · x[cols] with W bf16 (or
// fp32, for exact checks) row-major in device memory, fp32 accumulation and
// fp32 output, plus what the decode path fuses into it (a residual add, an
// RMSNorm of the input, SiLU(gate)·up formed from the input). Memory-bound by
// design: see gemv.cu for the layout.
//
// Layout contract for W: the data pointer is 16-byte aligned and the row
// stride `ld` (in elements) is >= cols and spans whole 16-byte groups (a
// multiple of 8 for bf16, of 4 for fp32), so every row starts on a 16-byte
// boundary and is read with 16-byte loads. The uploader pads rows whose width
// does not fill the last group (ranks like 1491); the padding's values are
// never used, so it may hold anything.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// A GEMV input: a device vector of fp32 or bf16 values (bf16 halves the
// input's bytes when the producer already rounded it), or the MLP activation
// x[k] = silu(gate[k]) · up[k] of two fp32 vectors, formed as the kernel
// stages its input (no launch of its own, no round trip through memory).
struct DeviceVec {
  enum class Kind : uint8_t { F32, BF16, SiluMul };
  const void* data = nullptr;  // the values, or gate
  const float* up = nullptr;   // SiluMul only
  Kind kind = Kind::F32;
  static DeviceVec f32(const float* p) { return {p, nullptr, Kind::F32}; }
  static DeviceVec bf16_values(const __nv_bfloat16* p) { return {p, nullptr, Kind::BF16}; }
  static DeviceVec silu_mul(const float* gate, const float* up) { return {gate, up, Kind::SiluMul}; }
};

// Launch shape; 0 lets the launcher choose. `splits` > 1 cuts the columns into
// that many slices (split-K, at most 8), for matrices whose rows are too few
// to fill the GPU; the CTAs of one row tile form a thread-block cluster and
// add their partial sums in a fixed order, so results are bitwise
// reproducible for a given configuration.
//
// `early_weights` launches with programmatic dependent launch: the kernel
// starts while the previous kernel in the stream is still running, loads its
// first weights, and waits for that kernel only before reading x or touching
// y. This hides launch latency between back-to-back GEMVs (the decode path);
// it requires that the previous kernel does not write W. It is ignored for
// launches whose CTAs stream more than 4 KB of each row (2048 bf16 columns),
// where it measured slower.
//
// `rows_per_warp` (2 or 4) trades rows for depth: a warp keeps the same
// number of weight loads in flight either way, over fewer rows and more steps
// of each, so matrices with few rows can fill the GPU with fewer slices.
struct GemvConfig {
  int warps = 0;   // warps per CTA, 1..8
  int splits = 0;  // column slices, 1..8
  bool early_weights = false;
  int rows_per_warp = 0;
};

// What a launch will do once automatic choices are made.
struct GemvPlan {
  int warps = 0;
  int rows_per_warp = 0;
  int splits = 0;      // slices actually launched (may be fewer than asked)
  int chunk_cols = 0;  // columns per slice (whole 512-byte warp steps unless cols is smaller)
  int tiles = 0;       // row tiles; the grid is tiles * splits CTAs
};

// All functions below validate the layout (throwing fsvd::Error), enqueue one
// kernel on `stream` and return; they may be captured into CUDA graphs.
// Columns are limited to 32768 (8 slices of 4096).

// y = W·x.
void gemv(const DeviceMatrix& w, DeviceVec x, float* y, cudaStream_t stream, GemvConfig cfg = {});
// y += W·x (the residual add after o and down projections).
void gemv_residual(const DeviceMatrix& w, DeviceVec x, float* y, cudaStream_t stream,
                   GemvConfig cfg = {});
// Every CTA of rmsnorm_gemv stages all of x: at most 32 KB of shared memory.
constexpr int kMaxRmsnormGemvCols = 8192;
// y = W · (x / sqrt(mean(x^2) + eps) ⊙ gain), x and gain fp32 of length cols
// (at most kMaxRmsnormGemvCols), both 16-byte aligned: the RMSNorm before a
// projection, computed inside every CTA (no extra launch).
void rmsnorm_gemv(const DeviceMatrix& w, const float* x, const float* gain, float eps, float* y,
                  cudaStream_t stream, GemvConfig cfg = {});

// One product of a grouped launch: y = W·x.
struct GemvGroup {
  DeviceMatrix w;
  DeviceVec x;
  float* y = nullptr;
};

constexpr int kMaxGemvGroups = 4;

// y_g = W_g·x_g for groups[0 .. count), 1 <= count <= kMaxGemvGroups, in one
// launch (the q, k, v or gate, up second factors of a decode step: one
// launch cost instead of several). Each W_g follows the layout contract above
// with its own shape and stride; all share one weight type, and all x_g one
// kind, fp32 or bf16 (they may overlap, e.g. slices of one packed rank-space
// vector); the y_g must not overlap each other or any x_g. `cfg` applies to the launch as a whole:
// every group gets the same warps and the same requested column slices, so
// with an explicit cfg each y_g is bitwise what gemv(W_g, x_g, y_g, cfg)
// gives. The automatic choice counts the row tiles of all groups together.
void gemv_grouped(const GemvGroup* groups, int count, cudaStream_t stream, GemvConfig cfg = {});

// What a launch fuses into the staging of its input (the automatic plan
// depends on it): nothing, the RMSNorm (rmsnorm_gemv) or SiLU(gate)·up.
enum class GemvFusion : uint8_t { None, RmsNorm, SiluMul };

// The launch shape the functions above use for W [rows, cols] of `weights`
// values on a GPU with sm_count SMs.
GemvPlan plan_gemv(int64_t rows, int64_t cols, GemvConfig cfg, int sm_count,
                   ElementType weights = ElementType::BF16, GemvFusion fusion = GemvFusion::None);
// The same for gemv_grouped (validates only count and cfg): `tiles` sums the
// groups' row tiles, `splits` is the CTAs per row tile of every group (the
// most any group needs; groups with fewer slices leave the rest idle), and
// `chunk_cols` the widest slice.
GemvPlan plan_gemv_grouped(const GemvGroup* groups, int count, GemvConfig cfg, int sm_count);

}  // namespace fsvd::cuda
