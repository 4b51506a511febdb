#pragma once
// `flashsvd bench --synthetic bert-base|bert-large|minilm-l6`: the encoder's
// forward pass over batches of inputs (the FlashSVD paper's Table 5 columns:
// latency, sequences/s, peak device memory).
#include <nlohmann/json.hpp>
#include <vector>

#include "apps/model_flags.h"
#include "apps/synthetic_flags.h"

namespace fsvd {

struct EncoderBenchShape {
  std::vector<int> batches{32};
  std::vector<int> seqs{512};  // every input this long, or (varlen) lengths spread over [16, seq]
  bool varlen = false;
  bool new_shapes = false;  // varlen lengths drawn afresh for every pass (a server's batches)
  int repeat = 20;
};

// One row per (batch, seq): the mean and best latency of `repeat` timed
// passes after warm-up ones, sequences/s, tokens, peak device bytes.
std::vector<nlohmann::json> bench_encoder(const SyntheticFlags& sf, const ModelFlags& mf, const EncoderBenchShape& s);

}  // namespace fsvd
