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
  // Runs `reference` (packed) once over `tokens` (one window from position 0),
  // keeping its log-probabilities (tokens × vocab floats) and every layer's
  // input rows (layers × tokens × hidden floats).
  KlProbe(const Model& reference, std::vector<int32_t> tokens, int threads);
  // Mean KL(reference ‖ probe) per position, in nats; `probe` packed, same
  // shape. Its layers before `first_changed` must be the reference's: their
  // outputs are taken from the reference run instead of computed again.
  double kl(const Model& probe, int first_changed = 0) const;
  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }

 private:
  // Logits of `rows` [tokens, hidden] run through layers [first, layers) of
  // `m`, and each row's log Σ exp; each layer's input rows appended to
  // `inputs` when given.
  std::vector<float> logits(const Model& m, int first, std::vector<float> rows, std::vector<double>& log_norm,
                            std::vector<std::vector<float>>* inputs) const;

  std::vector<int32_t> tokens_;
  int threads_;
  std::vector<std::vector<float>> layer_inputs_;  // [layer] of the reference
  // The reference's probabilities p [tokens, vocab], each position's Σ p (1
  // up to their fp32 rounding) and Σ p·log p over all positions: per position
  // KL(p ‖ q) = Σ p·log p − Σ p·logit_q + Σ p · log Σ exp logit_q, so a probe
  // needs its logits' log-normalizers but no log-softmax.
  std::vector<float> reference_;
  std::vector<double> mass_;
  double reference_neg_entropy_ = 0;
};

}  // namespace fsvd
