#pragma once
// The seven projections of a layer that compression factors, with the input
// each reads (q|k|v and gate|up share theirs).
#include <iterator>

#include "backends/cpu/cpu_executor.h"
#include "model/model.h"

namespace fsvd {

struct MatrixKind {
  const char* name;
  Linear Layer::*member;
  LinearInput input;
};
inline constexpr MatrixKind kKinds[] = {
    {"q", &Layer::q, LinearInput::Qkv},          {"k", &Layer::k, LinearInput::Qkv},
    {"v", &Layer::v, LinearInput::Qkv},          {"o", &Layer::o, LinearInput::O},
    {"gate", &Layer::gate, LinearInput::GateUp}, {"up", &Layer::up, LinearInput::GateUp},
    {"down", &Layer::down, LinearInput::Down}};
inline constexpr int kKindCount = std::size(kKinds);

}  // namespace fsvd
