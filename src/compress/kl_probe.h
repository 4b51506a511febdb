#pragma once
// How far a modified model's next-token distributions move from a reference
// model's: the mean KL(reference ‖ probe) over the positions of one window of
// probe tokens. KL rather than the text's NLL: no label noise, so a few
// hundred tokens rank the damage of different truncations stably.
#include <cstdint>
#include <vector>

#include "model/model.h"

namespace fsvd {

class KlProbe {
 public:
  // Runs `reference` (packed) once over `tokens` (one window from position 0)
  // and keeps its log-probabilities: tokens × vocab floats.
  KlProbe(const Model& reference, std::vector<int32_t> tokens, int threads);
  // Mean KL(reference ‖ probe) per position, in nats; `probe` packed, same shape.
  double kl(const Model& probe) const;
  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  std::vector<float> log_probs(const Model& m) const;

  std::vector<int32_t> tokens_;
  int threads_;
  std::vector<float> reference_;
};

}  // namespace fsvd
