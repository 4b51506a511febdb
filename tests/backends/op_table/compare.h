#pragma once
// Judges a device output against its reference under the reference's tolerance.
#include <string>
#include <vector>

#include "backends/op_table/op_case.h"

namespace fsvd::optable {

// Empty when `got` agrees with `want`; otherwise a line saying how it does
// not: the output, the error against the bound and its justification, the
// worst element's index with the CPU and CUDA values, and how many elements
// are out of bounds.
std::string compare(const Expected& want, const std::vector<float>& got);

}  // namespace fsvd::optable
