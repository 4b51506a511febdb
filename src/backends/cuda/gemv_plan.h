#pragma once
// How a GEMV is launched: the shape a caller may ask for (GemvConfig), the
// shape the planner chooses from the product's size and the GPU's SM count
// (GemvPlan), and the kernel limits both respect. Host code (gemv_plan.cpp);
// C++17, since gemv.cu includes it.
#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// The kernel's limits (gemv.cu explains the layout they describe).
namespace gemv_limits {
constexpr int kLoadsInFlight = 8;     // 16-byte weight loads a lane issues before using any
constexpr int kMaxRowsPerWarp = 4;    // W rows per warp: 2 or 4 (GemvConfig::rows_per_warp)
constexpr int kStepGroups = 32;       // 16-byte groups per warp step: one per lane
constexpr int kMaxChunkCols = 4096;   // columns per slice: its x in 16 KB of shared memory
constexpr int kMaxSplits = 8;         // portable thread-block cluster size
constexpr int kMaxWarps = 8;          // CTAs of at most 256 threads: the kernel's launch bound
constexpr int kMaxEarlyChunkBytes = 4096;  // longest slice row (2048 bf16 columns) for early_weights
constexpr int kMaxBatch = 16;         // input vectors of one launch (a thread keeps rows x batch tile sums)

// The kernel instance for `batch` input vectors: the smallest tile of 1, 2,
// 4, 8 or 16 that holds them (rows past `batch` are skipped, not computed).
constexpr int batch_tile(int batch) {
  int tile = 1;
  while (tile < batch) tile *= 2;
  return tile;
}
// CTAs of kMaxWarps warps resident per SM: the instance's launch bound, set
// by the registers its sums and loads in flight need without spilling (at
// batch 1, 65536 registers / 64 a thread / 256 threads).
constexpr int resident_ctas(int tile) { return tile == 1 ? 4 : tile <= 4 ? 3 : 2; }
// 16-byte weight loads a lane issues before using any: half at tile 16, whose
// 4 x 16 sums a thread take the registers the other half would need.
constexpr int loads_in_flight(int tile) { return tile < 16 ? kLoadsInFlight : kLoadsInFlight / 2; }
// Columns of x a CTA stages at once for all tile rows (a whole slice at batch
// 1): with the RMSNorm's gain, 16 KB at batch 1, at most 48 KB for the tiles
// of 3 CTAs an SM and 72 KB for those of 2.
constexpr int window_cols(int tile) { return tile <= 2 ? kMaxChunkCols : tile <= 8 ? 2048 : 1024; }
}  // namespace gemv_limits

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
//
// `batch_invariant` gives each of several input vectors bitwise what it gets
// alone: the automatic choices are batch 1's whatever the batch, and an
// RMSNorm's sum of squares is taken over each whole vector in batch 1's
// order (every CTA reads all of x again) instead of per staged window.
struct GemvConfig {
  int warps = 0;   // warps per CTA, 1..8
  int splits = 0;  // column slices, 1..8
  bool early_weights = false;
  int rows_per_warp = 0;
  bool batch_invariant = false;
};

// What a launch will do once automatic choices are made.
struct GemvPlan {
  int warps = 0;
  int rows_per_warp = 0;
  int splits = 0;      // slices actually launched (may be fewer than asked)
  int chunk_cols = 0;  // columns per slice (whole 512-byte warp steps unless cols is smaller)
  int tiles = 0;       // row tiles; the grid is tiles * splits CTAs
  int batch_tile = 0;  // input vectors the kernel instance holds (gemv_limits::batch_tile)
};

// Throw Error naming `where` for a config or a batch outside the limits above.
void check_gemv_config(GemvConfig cfg, const char* where);
void check_gemv_batch(int batch, const char* where);

// What a launch fuses into the staging of its input (the automatic plan
// depends on it): nothing, the RMSNorm (rmsnorm_gemv) or SiLU(gate)·up.
enum class GemvFusion : uint8_t { None, RmsNorm, SiluMul };

// The launch shape gemv, gemv_residual and rmsnorm_gemv (gemv.h) use for W
// [rows, cols] of `weights` values and `batch` input vectors on a GPU with
// sm_count SMs.
GemvPlan plan_gemv(int64_t rows, int64_t cols, int batch, GemvConfig cfg, int sm_count,
                   ElementType weights = ElementType::BF16, GemvFusion fusion = GemvFusion::None);

// The plans of `count` products of weights w[0..count) launched together
// over `batch` input vectors (plans[i] for product i) and of the launch:
// common warps and rows per warp; one request of column slices, chosen over
// all their row tiles; the launch's `splits` is the largest product's, its
// `tiles` the sum and its `chunk_cols` the widest. Does not validate cfg
// (check_gemv_config) or batch.
GemvPlan plan_gemv_launch(const DeviceMatrix* w, int count, int batch, GemvConfig cfg, GemvFusion fusion,
                          int sm_count, GemvPlan* plans);

}  // namespace fsvd::cuda
