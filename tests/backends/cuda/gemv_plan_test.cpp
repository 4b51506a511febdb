// The GEMV planner's launch shapes: invariants over odd shapes and every
// configuration, and the automatic shapes the decode path was tuned to.
// Needs no GPU.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/gemv_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "backends/cuda/gemv.h"
#include "backends/cuda/gemv_test_util.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

using testutil::describe;
using testutil::kConfigs;
using testutil::kTypes;
using testutil::type_name;

// Launch-shape invariants, checked without a GPU.
TEST(GemvPlan, SlicesCoverColumnsWithoutEmptyOnesAndFitSharedMemory) {
  for (ElementType type : kTypes) {
    for (int64_t rows : {1, 14, 258, 2000, 22016})
      for (int64_t cols : {1, 8, 9, 1491, 4096, 11008, 32768})
        for (int batch : {1, 5, 16})
        for (GemvConfig cfg : kConfigs) {
          const GemvPlan p = plan_gemv(rows, cols, batch, cfg, 132, type);
          SCOPED_TRACE(type_name(type) + " rows " + std::to_string(rows) + " cols " + std::to_string(cols) +
                       " batch " + std::to_string(batch) + " " + describe(cfg));
          EXPECT_EQ(p.batch_tile, batch == 1 ? 1 : batch == 5 ? 8 : 16);
          if (cfg.rows_per_warp > 0) {
            EXPECT_EQ(p.rows_per_warp, cfg.rows_per_warp);
          }
          EXPECT_GE(int64_t{p.tiles} * p.warps * p.rows_per_warp, rows);
          EXPECT_LT(int64_t{p.tiles - 1} * p.warps * p.rows_per_warp, rows);
          EXPECT_GE(int64_t{p.splits} * p.chunk_cols, cols);
          EXPECT_LT(int64_t{p.splits - 1} * p.chunk_cols, cols);
          EXPECT_LE(p.chunk_cols, 4096);
          EXPECT_EQ(p.chunk_cols % values_per_16_bytes(type), 0);
          // Never more slices than asked, unless the shared-memory cap forces them.
          if (cfg.splits > 0) {
            EXPECT_LE(p.splits, std::max<int64_t>(cfg.splits, (cols + 4095) / 4096));
          }
        }
  }
  // Few rows, many columns: the launcher splits so every SM gets work, in
  // slices of whole 512-byte warp steps.
  for (ElementType type : kTypes) {
    const GemvPlan narrow = plan_gemv(1024, 4096, 1, {}, 132, type);
    EXPECT_GT(narrow.splits, 1);
    EXPECT_GE(narrow.tiles * narrow.splits, 132);
    EXPECT_EQ(narrow.chunk_cols * element_bytes(type) % 512, 0);
  }
}

// The automatic shapes of the LLaMA-7B decode launches (dense, keep 0.5 and 0.4; one of Llama-3-8B)
// with early_weights, as measured fastest in the decode chain on H200.
TEST(GemvPlan, DecodeShapesGetTheMeasuredPlans) {
  const GemvConfig pdl{0, 0, true};
  auto plan = [&](int64_t rows, int64_t cols, GemvFusion fusion) {
    const GemvPlan p = plan_gemv(rows, cols, 1, pdl, 132, ElementType::BF16, fusion);
    return std::make_tuple(p.rows_per_warp, p.warps, p.splits);
  };
  using F = GemvFusion;
  EXPECT_EQ(plan(3072, 4096, F::RmsNorm), std::make_tuple(4, 8, 4));   // keep 0.5 q|k|v first
  EXPECT_EQ(plan(1024, 4096, F::None), std::make_tuple(4, 8, 8));      // o first
  EXPECT_EQ(plan(4096, 1024, F::None), std::make_tuple(4, 8, 2));      // o second
  EXPECT_EQ(plan(1492, 11008, F::SiluMul), std::make_tuple(4, 8, 8));  // down first
  EXPECT_EQ(plan(4096, 1492, F::None), std::make_tuple(4, 8, 2));      // down second
  EXPECT_EQ(plan(2472, 4096, F::RmsNorm), std::make_tuple(4, 8, 4));   // keep 0.4 q|k|v first (not 6 slices)
  EXPECT_EQ(plan(2400, 4096, F::RmsNorm), std::make_tuple(4, 8, 4));   // keep 0.4 gate|up first
  EXPECT_EQ(plan(4096, 819, F::None), std::make_tuple(2, 8, 1));       // keep 0.4 o second (256 CTAs, not 128)
  EXPECT_EQ(plan(4096, 1592, F::None), std::make_tuple(4, 8, 3));      // Llama-3-8B keep 0.5 down second
  EXPECT_EQ(plan(12288, 4096, F::RmsNorm), std::make_tuple(4, 8, 1));  // dense q|k|v
  EXPECT_EQ(plan(4096, 4096, F::None), std::make_tuple(2, 8, 2));      // dense o
  EXPECT_EQ(plan(22016, 4096, F::RmsNorm), std::make_tuple(4, 8, 2));  // dense gate|up
  EXPECT_EQ(plan(4096, 11008, F::SiluMul), std::make_tuple(4, 8, 8));  // dense down
  const GemvGroup up{{nullptr, 11008, 1492, 1496}, {}, {}};
  const GemvGroup gate_up[] = {up, up};
  const GemvPlan g = plan_gemv_grouped(gate_up, 2, 1, pdl, 132);  // gate, up second factors
  EXPECT_EQ(std::make_tuple(g.rows_per_warp, g.splits), std::make_tuple(2, 1));
  // At keep 0.7 (rank 2089) their rows pass 4 KB: still unsplit (2 slices cost ~0.18 ms a token).
  const GemvGroup up7{{nullptr, 11008, 2089, 2096}, {}, {}};
  const GemvGroup gate_up7[] = {up7, up7};
  const GemvPlan g7 = plan_gemv_grouped(gate_up7, 2, 1, pdl, 132);
  EXPECT_EQ(std::make_tuple(g7.rows_per_warp, g7.splits), std::make_tuple(2, 1));
}

// Batches: the instance is the smallest tile of 1, 2, 4, 8, 16 holding the
// batch; rows per warp are 2 up to tile 4 and 4 from tile 8; at least 2
// slices, at tile 16 up to 4 (one per 4 warp steps), as measured fastest.
TEST(GemvPlan, BatchesGetTheirTileAndFewerSlices) {
  const int tiles[] = {1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 16};
  for (int batch = 1; batch <= gemv_limits::kMaxBatch; ++batch) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    EXPECT_EQ(gemv_limits::batch_tile(batch), tiles[batch - 1]);
    const GemvPlan p = plan_gemv(1024, 4096, batch, {}, 132);  // the o first factor at keep 0.5
    EXPECT_EQ(p.batch_tile, tiles[batch - 1]);
    EXPECT_EQ(p.tiles, 1024 / (8 * p.rows_per_warp));
    if (batch > 1) {
      EXPECT_EQ(p.rows_per_warp, batch > 4 ? 4 : 2);
      EXPECT_GE(p.splits, 2);
    }
  }
  auto splits = [](int64_t rows, int64_t cols, int batch) { return plan_gemv(rows, cols, batch, {}, 132).splits; };
  EXPECT_EQ(splits(1024, 4096, 1), 8);  // rows too few for a wave: slices fill it
  EXPECT_EQ(splits(1024, 4096, 16), 8);
  EXPECT_EQ(splits(4096, 1024, 1), 2);
  EXPECT_EQ(splits(4096, 1024, 2), 2);   // keep 0.5's q second factor
  EXPECT_EQ(splits(4096, 1024, 16), 2);  // 4 warp steps: 2 slices, not 4
  EXPECT_EQ(splits(22016, 4096, 1), 1);  // dense gate|up: more than a wave
  EXPECT_EQ(splits(22016, 4096, 4), 2);
  EXPECT_EQ(splits(22016, 4096, 16), 4);
  EXPECT_EQ(splits(4096, 11008, 16), 4);  // dense down: 3 slices of 4096 columns at least, 4 at tile 16
  EXPECT_THROW(plan_gemv(1024, 4096, 0, {}, 132), Error);
  EXPECT_THROW(plan_gemv(1024, 4096, gemv_limits::kMaxBatch + 1, {}, 132), Error);
}

// Batch-invariant: every batch gets batch 1's warps, rows per warp and
// slices (the summation order of each vector's result), in its own tile.
TEST(GemvPlan, BatchInvariantBatchesGetTheOneVectorPlan) {
  GemvConfig invariant;
  invariant.batch_invariant = true;
  for (GemvFusion fusion : {GemvFusion::None, GemvFusion::RmsNorm, GemvFusion::SiluMul})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1024, 4096}, {4096, 1024}, {22016, 4096}, {4096, 11008}}) {
      const GemvPlan one = plan_gemv(rows, cols, 1, {}, 132, ElementType::BF16, fusion);
      for (int batch = 1; batch <= gemv_limits::kMaxBatch; ++batch) {
        SCOPED_TRACE("[" + std::to_string(rows) + ", " + std::to_string(cols) + "] batch " + std::to_string(batch));
        const GemvPlan p = plan_gemv(rows, cols, batch, invariant, 132, ElementType::BF16, fusion);
        EXPECT_EQ(p.batch_tile, gemv_limits::batch_tile(batch));
        EXPECT_EQ(p.warps, one.warps);
        EXPECT_EQ(p.rows_per_warp, one.rows_per_warp);
        EXPECT_EQ(p.splits, one.splits);
        EXPECT_EQ(p.chunk_cols, one.chunk_cols);
      }
    }
}

// A grouped launch of one product is planned like the single GEMV; more
// products share the wave, and the cluster is as large as the widest needs.
TEST(GemvPlan, GroupedPlanCountsAllGroupsTiles) {
  auto group = [](int64_t rows, int64_t cols, ElementType type) {
    return GemvGroup{{nullptr, rows, cols, cols, type}, {}, {}};
  };
  for (ElementType type : kTypes)
    for (int64_t rows : {2, 258, 4096})
      for (int64_t cols : {1, 1491, 4096, 32768})
        for (GemvConfig cfg : kConfigs) {
          const GemvGroup one = group(rows, cols, type);
          const GemvPlan a = plan_gemv(rows, cols, 1, cfg, 132, type), b = plan_gemv_grouped(&one, 1, 1, cfg, 132);
          EXPECT_EQ(std::make_tuple(a.warps, a.splits, a.chunk_cols, a.tiles),
                    std::make_tuple(b.warps, b.splits, b.chunk_cols, b.tiles));
        }
  // LLaMA-7B q, k, v second factors: 3 x 128 tiles of 8 warps fill one wave unsplit.
  const GemvGroup qkv[] = {group(4096, 1024, ElementType::BF16), group(4096, 1024, ElementType::BF16),
                           group(4096, 1024, ElementType::BF16)};
  const GemvPlan p = plan_gemv_grouped(qkv, 3, 1, {}, 132);
  EXPECT_EQ(p.rows_per_warp, 4);
  EXPECT_EQ(p.tiles, 384);
  EXPECT_EQ(p.splits, 1);
  // 11008 columns need 3 slices of <= 4096; the 8-column product gets one and idles the rest.
  const GemvGroup wide[] = {group(129, 11008, ElementType::BF16), group(7, 8, ElementType::BF16)};
  const GemvPlan w = plan_gemv_grouped(wide, 2, 1, {8, 1, false, 4}, 132);
  EXPECT_EQ(w.splits, 3);
  EXPECT_EQ(w.tiles, 5 + 1);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
