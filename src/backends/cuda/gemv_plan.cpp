// The GEMV launch planner (see gemv_plan.h).
#include "backends/cuda/gemv_plan.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

namespace fsvd::cuda {
namespace {

using namespace gemv_limits;

// The plan of one product for a request of `splits` column slices (0 counts as 1).
GemvPlan plan_product(const DeviceMatrix& w, int warps, int rows_per_warp, int64_t splits) {
  check(w.rows >= 1 && w.cols >= 1, "plan_gemv", "empty matrix [", w.rows, ", ", w.cols, "]");
  const int64_t group = values_per_16_bytes(w.type);
  const int64_t groups = ceil_div(w.cols, group);
  GemvPlan plan;
  plan.warps = warps;
  plan.rows_per_warp = rows_per_warp;
  plan.tiles = static_cast<int>(ceil_div(w.rows, int64_t{warps} * rows_per_warp));
  splits = std::max<int64_t>({splits, 1, ceil_div(groups, kMaxChunkCols / group)});
  int64_t chunk = ceil_div(groups, splits);
  if (chunk > kStepGroups) chunk = ceil_div(chunk, kStepGroups) * kStepGroups;  // whole warp steps
  plan.splits = static_cast<int>(ceil_div(groups, chunk));
  plan.chunk_cols = static_cast<int>(chunk * group);
  return plan;
}

}  // namespace

void check_gemv_batch(int batch, const char* where) {
  check(batch >= 1 && batch <= kMaxBatch, where, "batch of ", batch, " input vectors; 1..", kMaxBatch,
        " are supported");
}

void check_gemv_config(GemvConfig cfg, const char* where) {
  check(cfg.warps >= 0 && cfg.warps <= kMaxWarps, where, "warps per CTA ", cfg.warps, " not in 1..",
        kMaxWarps);
  check(cfg.splits >= 0 && cfg.splits <= kMaxSplits, where, "splits ", cfg.splits, " not in 1..",
        kMaxSplits);
  check(cfg.rows_per_warp == 0 || cfg.rows_per_warp == 2 || cfg.rows_per_warp == kMaxRowsPerWarp, where,
        "rows per warp ", cfg.rows_per_warp, " not 2 or ", kMaxRowsPerWarp);
}

// Automatic choices, from sweeping each launch shape inside the LLaMA-7B
// decode chains (dense, keep 0.5 and 0.4) on H200 (bench/kernels/gemv_notes.md):
// - slices: as many as keep the CTAs in one wave, each giving every warp at
//   least one full batch of loads (SiLU·up: as many as that allows, which
//   shortens each CTA's staging). A norm launch of more than one wave
//   unsplit gets at least the slices that early_weights needs (rows <= 4 KB
//   a slice: the dense gate|up); the gate, up second factors at keep 0.7
//   (2089 columns) decoded slower with them.
// - rows per warp: 4, which keeps the CTAs few where every CTA stages much
//   besides its slice (the norm stages all of x, SiLU·up reads two vectors per
//   value); 2 for a plain or residual product of more than one wave (the
//   gate, up second factors), whose rows need slices for early_weights
//   anyway when 2-row warps fill the wave with no more slices than that (the
//   dense o projection; with 4-row warps it would need twice as many), or
//   that would give fewer CTAs than SMs with 4-row warps.
// - batched (more than one input vector), from sweeping the launch shapes
//   of LLaMA-7B's matrices at B = 2..16 (gemv_notes.md, "Batched GEMV"):
//   the wave counts the tile's resident CTAs, fewer for larger tiles, but
//   shorter CTAs measured faster even past one wave, so never fewer than 2
//   slices, and at tile 16 one per 4 warp steps up to 4. Rows per warp: 2
//   up to tile 4 (4-row warps spill in the 80 registers of 3 CTAs an SM), 4
//   from tile 8, where each x value a warp loads from shared memory must
//   serve 4 rows' products for those loads not to bound the launch.
GemvPlan plan_gemv_launch(const DeviceMatrix* w, int count, int batch, GemvConfig cfg, GemvFusion fusion,
                          int sm_count, GemvPlan* plans) {
  const int warps = cfg.warps > 0 ? cfg.warps : kMaxWarps;
  const bool norm = fusion == GemvFusion::RmsNorm, silu = fusion == GemvFusion::SiluMul;
  const int tile = batch_tile(cfg.batch_invariant ? 1 : batch);  // the tile the choices are made for
  const int64_t slots = int64_t{sm_count} * (resident_ctas(tile) * kMaxWarps / warps);
  int64_t groups = 0, row_bytes = 0;  // of the widest product
  for (int i = 0; i < count; ++i) {
    groups = std::max(groups, ceil_div(w[i].cols, values_per_16_bytes(w[i].type)));
    row_bytes = std::max(row_bytes, w[i].cols * element_bytes(w[i].type));
  }
  auto unsplit_tiles = [&](int rows_per_warp) {
    int64_t tiles = 0;
    for (int i = 0; i < count; ++i) tiles += plan_product(w[i], warps, rows_per_warp, 1).tiles;
    return tiles;
  };
  const int64_t early_splits =
      cfg.early_weights ? std::min<int64_t>(ceil_div(row_bytes, kMaxEarlyChunkBytes), kMaxSplits) : 1;
  // Slices for warps of `rows` rows (cfg's, or as above), never 5-7 unless
  // early_weights needs them: 6 slices of a 4096-column row (clusters of 6)
  // were slower than 4 in the keep-0.4 chain, while 3 slices of Llama-3-8B
  // keep 0.5's down second factor [4096, 1592] decode faster than 2.
  auto slices_for = [&](int rows) {
    if (cfg.splits > 0) return int64_t{cfg.splits};
    const int64_t tiles = unsplit_tiles(rows);
    const int64_t deep = groups / (loads_in_flight(tile) / rows * kStepGroups);
    int64_t s = std::min<int64_t>({silu ? kMaxSplits : slots / tiles, deep, kMaxSplits});
    if (tile > 1)
      s = std::max<int64_t>({s, 2, tile == kMaxBatch ? std::min<int64_t>(4, ceil_div(groups, kStepGroups) / 4) : 0});
    if (s > 4 && s < kMaxSplits) s = 4;
    if (norm && tiles > slots) s = std::max(s, early_splits);
    return s;
  };
  int rows_per_warp = cfg.rows_per_warp;
  if (rows_per_warp == 0 && tile > 1) {
    rows_per_warp = tile >= 8 ? kMaxRowsPerWarp : 2;
  } else if (rows_per_warp == 0) {
    const bool light = !norm && !silu;  // a CTA stages only its slice of x
    const bool more_than_a_wave = unsplit_tiles(kMaxRowsPerWarp) > slots;
    const bool slices_needed_anyway = early_splits > 1 && slots / unsplit_tiles(2) <= early_splits;
    // Rows too short for slices at 4 rows a warp leave SMs without a CTA
    // (keep 0.4's o second factor [4096, 819]: 128 CTAs).
    const bool idles_sms =
        unsplit_tiles(kMaxRowsPerWarp) * std::max<int64_t>(slices_for(kMaxRowsPerWarp), 1) < sm_count;
    rows_per_warp = light && (more_than_a_wave || slices_needed_anyway || idles_sms) ? 2 : kMaxRowsPerWarp;
  }
  const int64_t splits = slices_for(rows_per_warp);
  GemvPlan launch;
  launch.warps = warps;
  launch.rows_per_warp = rows_per_warp;
  launch.batch_tile = batch_tile(batch);
  for (int i = 0; i < count; ++i) {
    plans[i] = plan_product(w[i], warps, rows_per_warp, splits);
    plans[i].batch_tile = launch.batch_tile;
    launch.tiles += plans[i].tiles;
    launch.splits = std::max(launch.splits, plans[i].splits);
    launch.chunk_cols = std::max(launch.chunk_cols, plans[i].chunk_cols);
  }
  return launch;
}

GemvPlan plan_gemv(int64_t rows, int64_t cols, int batch, GemvConfig cfg, int sm_count, ElementType weights,
                   GemvFusion fusion) {
  check_gemv_config(cfg, "plan_gemv");
  check_gemv_batch(batch, "plan_gemv");
  const DeviceMatrix w{nullptr, rows, cols, cols, weights};
  GemvPlan plan;
  return plan_gemv_launch(&w, 1, batch, cfg, fusion, sm_count, &plan);
}

}  // namespace fsvd::cuda
