#pragma once
// safetensors writer: fp32 tensors stored as F32, F16 or BF16, back to back in
// the given order. The header is padded with spaces to a multiple of 8 bytes
// (as the reference implementation does) so every tensor of a mapped file is
// aligned for its dtype.
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace fsvd {

struct SafetensorsEntry {
  std::string name;
  Tensor tensor;             // fp32 values
  DType dtype = DType::F32;  // stored as: F32, F16 or BF16 (rounded to nearest even)
};

// Writes through `path`.partial, renamed to `path` once complete, so a failed
// write never leaves a truncated file under the real name. Throws Error naming
// the path for duplicate or empty names, other dtypes, a finite value that
// overflows F16, and I/O failures.
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace fsvd
