#pragma once
// GEMV for decode, batched: y_b[rows] = W[rows, cols] · x_b[cols] for b <
// batch (1..16 input vectors, the sequences of one decode step), W read once
// for all of them. W is bf16 (or fp32, for exact checks) row-major in device
// memory, with fp32 accumulation and fp32 output, plus what the decode path
// fuses into it (a residual add, an RMSNorm of the input, SiLU(gate)·up formed
// from the input). Memory-bound by design: see gemv.cu for the layout. From
// 2 vectors on, Gemm::run (gemm.h) is faster for most of LLaMA-7B's matrices
// (bench/kernels/gemv_notes.md, "Batched GEMV", has the switch points).
//
// Layout contract for W: the data pointer is 16-byte aligned and the row
// stride `ld` (in elements) is >= cols and spans whole 16-byte groups (a
// multiple of 8 for bf16, of 4 for fp32), so every row starts on a 16-byte
// boundary and is read with 16-byte loads. The uploader pads rows whose width
// does not fill the last group (ranks like 1491); the padding's values are
// never used, so it may hold anything.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"
#include "backends/cuda/gemv_plan.h"

namespace fsvd::cuda {

// A GEMV input: `batch` device vectors of fp32 values, or the MLP activation
// x[k] = silu(gate[k]) · up[k] of two fp32 vectors each, formed as the kernel
// stages its input (no launch of its own, no round trip through memory).
// Vector b starts at data + b * ld (and up + b * ld); ld is not read at
// batch 1.
struct DeviceVec {
  enum class Kind : uint8_t { F32, SiluMul };
  const void* data = nullptr;  // the values, or gate
  const float* up = nullptr;   // SiluMul only
  Kind kind = Kind::F32;
  int64_t ld = 0;  // elements from one input vector to the next: >= cols when batch > 1
  static DeviceVec f32(const float* p, int64_t ld = 0) { return {p, nullptr, Kind::F32, ld}; }
  static DeviceVec silu_mul(const float* gate, const float* up, int64_t ld = 0) {
    return {gate, up, Kind::SiluMul, ld};
  }
};

// A GEMV output: fp32 vector b (W·x_b) at data + b * ld; ld is not read at
// batch 1.
struct DeviceOut {
  float* data = nullptr;
  int64_t ld = 0;  // >= rows when batch > 1: the vectors must not overlap
};

// All functions below take the input vectors' count, `batch` (1..kMaxBatch),
// validate the layout (throwing fsvd::Error), enqueue one kernel on `stream`
// and return; they may be captured into CUDA graphs. Columns are limited to
// 32768 (8 slices of 4096). With the same explicit cfg, each output vector is
// bitwise what the launch with that vector alone gives (the same slices, the
// same summation order); rmsnorm_gemv's is within rounding of it.

// y = W·x.
void gemv(const DeviceMatrix& w, DeviceVec x, DeviceOut y, int batch, cudaStream_t stream, GemvConfig cfg = {});
// y += W·x (the residual add after o and down projections).
void gemv_residual(const DeviceMatrix& w, DeviceVec x, DeviceOut y, int batch, cudaStream_t stream,
                   GemvConfig cfg = {});
// At batch 1 every CTA of rmsnorm_gemv stages all of x: at most 32 KB of shared memory.
constexpr int kMaxRmsnormGemvCols = 8192;
// y_b = W · (x_b / sqrt(mean(x_b^2) + eps) ⊙ gain), each input vector
// normalized by its own RMS; x fp32 (DeviceVec::f32) and gain of length cols
// (at most kMaxRmsnormGemvCols), both 16-byte aligned: the RMSNorm before a
// projection, computed inside every CTA (no extra launch).
void rmsnorm_gemv(const DeviceMatrix& w, DeviceVec x, const float* gain, float eps, DeviceOut y, int batch,
                  cudaStream_t stream, GemvConfig cfg = {});

// One product of a grouped launch: y = W·x.
struct GemvGroup {
  DeviceMatrix w;
  DeviceVec x;
  DeviceOut y;
};

constexpr int kMaxGemvGroups = 4;

// y_g = W_g·x_g for groups[0 .. count), 1 <= count <= kMaxGemvGroups, in one
// launch (the q, k, v or gate, up second factors of a decode step: one
// launch cost instead of several), every group over the same `batch` input
// vectors. Each W_g follows the layout contract above with its own shape and
// stride; all share one weight type, and all x_g are fp32 (they may overlap,
// e.g. slices of one packed rank-space vector); the y_g must not overlap each
// other or any x_g. `cfg` applies to the launch as a whole: every group gets
// the same warps and the same requested column slices, so with an explicit
// cfg each y_g is bitwise what gemv(W_g, x_g, y_g, cfg) gives. The automatic
// choice counts the row tiles of all groups together.
void gemv_grouped(const GemvGroup* groups, int count, int batch, cudaStream_t stream, GemvConfig cfg = {});

// plan_gemv (gemv_plan.h) for gemv_grouped (validates only count, batch and
// cfg): `tiles` sums the groups' row tiles, `splits` is the CTAs per row tile
// of every group (the most any group needs; groups with fewer slices leave the
// rest idle), and `chunk_cols` the widest slice.
GemvPlan plan_gemv_grouped(const GemvGroup* groups, int count, int batch, GemvConfig cfg, int sm_count);

}  // namespace fsvd::cuda
