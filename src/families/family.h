#pragma once
// A checkpoint family: how to recognise its files and how to load them into
// the unified model. load.cpp keeps the table of families in detection order;
// adding a family means one new module here and one line in that table.
#include <string>

#include "model/model.h"

namespace fsvd {

struct Family {
  const char* name;
  // Why `path` is not of this family, or "" when it is. Cheap: headers only.
  std::string (*mismatch)(const std::string& path);
  // A validated, packed model (see load_model).
  Model (*load)(const std::string& path);
};

}  // namespace fsvd
