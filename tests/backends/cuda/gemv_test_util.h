#pragma once
// What the GEMV tests and the planner's tests share: the weight types and
// the launch configurations they sweep.
#include <string>

#include "backends/cuda/device_matrix.h"
#include "backends/cuda/gemv_plan.h"

namespace fsvd::cuda::testutil {

inline constexpr ElementType kTypes[] = {ElementType::BF16, ElementType::F32};

inline std::string type_name(ElementType t) { return t == ElementType::F32 ? "fp32" : "bf16"; }

// Automatic choice, no split, an odd split with few warps, the most splits,
// and the 2-rows-per-warp instance split and not.
inline constexpr GemvConfig kConfigs[] = {{0, 0}, {8, 1}, {4, 7}, {3, 8}, {8, 1, false, 2}, {6, 3, false, 2}};

inline std::string describe(GemvConfig c) {
  return "warps " + std::to_string(c.warps) + " splits " + std::to_string(c.splits) + " rows/warp " +
         std::to_string(c.rows_per_warp) + (c.batch_invariant ? " batch-invariant" : "");
}

}  // namespace fsvd::cuda::testutil
