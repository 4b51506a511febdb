#pragma once
// Which activations a group of linears reads, and a hook that sees them: the
// CPU forwards (decoder and encoder) report every linear input through it, so
// compression can gather calibration statistics without its own forward.
#include <cstdint>
#include <functional>

namespace fsvd {

// The activations a group of linears reads: q|k|v and gate|up share theirs.
// An encoder's MLP input (its `up`) is GateUp.
enum class LinearInput { Qkv, O, GateUp, Down };

// Sees the rows [n, dim] each linear group of `layer` reads during a forward.
using LinearInputObserver =
    std::function<void(int layer, LinearInput input, const float* rows, int64_t n, int64_t dim)>;

}  // namespace fsvd
