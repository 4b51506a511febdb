#pragma once
// A description of a loaded model for `flashsvd info`: every linear's shape,
// rank and sharing, and parameter/byte totals counting shared storage once.
#include <string>
#include <utility>
#include <vector>

#include "model/model.h"

namespace fsvd {

struct LinearSummary {
  int layer = -1;  // -1 for lm_head
  std::string name;
  int64_t out = 0, in = 0;
  int64_t rank = -1;    // -1: dense
  bool shared = false;  // first factor also used by another layer
  int64_t params = 0;   // counted as if private
};

// One factor tensor used by linears of several layers (a shared basis).
struct SharedFactor {
  std::vector<int64_t> shape;
  std::vector<std::pair<int, std::string>> users;  // (layer, "q.first"), in layer order
};

struct ModelSummary {
  std::vector<LinearSummary> linears;
  std::vector<SharedFactor> shared;  // in order of first use
  int64_t unique_params = 0;  // each storage once
  int64_t dense_params = 0;   // the same model with every linear dense and private
};

ModelSummary summarize(const Model& model);

}  // namespace fsvd
