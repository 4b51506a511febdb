#pragma once
// Compresses a dense BERT-family encoder into low-rank factors with the
// decoder compressor's machinery (compress/whitening.h): SVD-LLM's
// truncation-aware whitening on calibration sentences, or plain SVD. Every
// layer's q, k, v, o, up (intermediate) and down (output) becomes first
// [r, in], second [out, r] at one rank per matrix type; embeddings, LayerNorms,
// biases, the pooling and the classifier head stay as they are (shared with
// the dense model, which is never modified).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compress/compressor.h"
#include "model/encoder.h"

namespace fsvd {

struct EncoderCompressOptions {
  // The kept fraction of the transformer layers' parameters, in (0, 1): their
  // matrices, biases and LayerNorms, the latter two kept whole, so the matrices
  // keep a little less. The embedding tables (lookups, no matrix product;
  // half of all-MiniLM-L6-v2) and the classifier head are not counted.
  double keep = 0.6;
  CompressMethod method = CompressMethod::Whiten;
  int64_t batch_tokens = 4096;  // calibration tokens per forward
  int threads = 0;              // CPU threads, 0: all
  // Calibration statistics held at once: as many layers as fit (at least one);
  // each calibration pass over the sentences serves that many layers.
  int64_t stats_budget_bytes = int64_t{2} << 30;
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
};

struct CompressedEncoder {
  EncoderModel model;  // validated and packed
  // method, keep ratio, calibration, per-type ranks, per-matrix relative
  // truncation losses, parameter counts.
  nlohmann::json provenance;
};

// `calibration` are the inputs whitening runs the dense encoder over (ignored
// by plain SVD). Throws Error for an encoder with low-rank linears, a ratio
// out of range, or whitening without calibration inputs.
CompressedEncoder compress_encoder(const EncoderModel& dense, std::vector<EncoderInput> calibration,
                                   const EncoderCompressOptions& options);

}  // namespace fsvd
