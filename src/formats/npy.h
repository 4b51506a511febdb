#pragma once
// NumPy .npy (version 1.0) writer for fp32 arrays, so results can be read by
// numpy.load / torch in other frameworks.
#include <cstdint>
#include <string>
#include <vector>

namespace fsvd {

void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

}  // namespace fsvd
