#pragma once
// The flags that pick a synthetic model (model/synthetic.h) instead of a
// checkpoint: `bench` runs one, `convert` writes one for the peer runtimes.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "model/synthetic.h"

namespace fsvd {

struct SyntheticFlags {
  std::string name;  // empty: no synthetic model
  double ratio = 0.5;
  double rank_spread = 0;
  bool given() const { return !name.empty(); }
  SyntheticSpec spec() const { return synthetic_spec(name, ratio, 0, rank_spread); }
};

// --synthetic NAME, --ratio R, --rank-spread S on `cmd`.
std::shared_ptr<SyntheticFlags> add_synthetic_flags(CLI::App& cmd);

}  // namespace fsvd
