#pragma once
// `flashsvd info` for encoders: architecture, pooling, labels, every linear.
#include "model/encoder.h"

namespace fsvd {

void print_encoder_info(const EncoderModel& model, bool json);

}  // namespace fsvd
