#pragma once
// Picks the next token from logits.
//
// Order of operations (each step only when enabled):
//   1. temperature == 0: greedy argmax (lowest id on ties); nothing else applies.
//   2. divide logits by temperature, softmax;
//   3. top-k: keep the k most probable tokens (top_k == 0: off);
//   4. top-p: of those, keep the smallest most-probable set whose probability
//      (renormalised after top-k) reaches top_p (top_p == 1: off);
//   5. draw from the kept tokens in proportion to their probabilities.
// Draws use std::mt19937_64 seeded with `seed`, turning 53 bits of each output
// into a uniform double, so the same seed gives the same tokens everywhere.
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "core/sampling_params.h"

namespace fsvd {


class Sampler {
 public:
  // Throws Error for a negative or non-finite temperature, negative top_k, or
  // top_p outside (0, 1].
  explicit Sampler(const SamplingParams& params);
  // Token id for one row of logits (throws on an empty row).
  int32_t sample(std::span<const float> logits);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<double, int32_t>> candidates_;  // (weight, id), reused across calls
};

}  // namespace fsvd
