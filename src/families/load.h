#pragma once
// Loads any supported checkpoint into the unified model. The family is detected
// from the path (file magic, directory contents); `family` forces one.
#include <string>

#include "model/model.h"

namespace fsvd {

struct LoadOptions {
  std::string family;  // empty: detect
};

// Returns a validated, packed model; throws Error naming the file and the problem.
Model load_model(const std::string& path, const LoadOptions& options = {});

// Name of the family that load_model would use for `path` (or throws if none fits).
std::string detect_family(const std::string& path);

}  // namespace fsvd
