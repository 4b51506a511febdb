#pragma once
// The reference logits make_lowrank_fixtures.py wrote next to a low-rank
// fixture (PyTorch, float64, on the family's own module structure), and the
// comparison of a loaded model's CPU fp32 logits against them.
#include <string>

#include "model/model.h"

namespace fsvd::test {

// Relative L2 error ||cpu - reference|| / ||reference|| over every position's
// logits for the tokens `reference_json` lists.
double relative_error_to_reference(const Model& model, const std::string& reference_json);

}  // namespace fsvd::test
