#pragma once
// Small random BERT-family encoders for tests, dense or with every layer
// linear factored as an exact chain (first = W, second = identity).
#include <cstdint>

#include "model/encoder.h"

namespace fsvd::testing {

// Weights Gaussian scaled by 1/sqrt(fan-in); LayerNorm weights 1 + noise.
// `labels` > 0 adds a classifier head; `chains` factors every layer linear.
// The result is validated and packed.
EncoderModel random_encoder(const EncoderConfig& config, uint64_t seed, int labels = 0, bool chains = false);

// hidden 16, intermediate 32, 2 layers, 4 heads, vocab 50, 24 positions, 2 token types.
EncoderConfig small_encoder_config();

}  // namespace fsvd::testing
