#pragma once
// Calibration for compressing an encoder: the dense encoder's CPU forward runs
// over calibration sentences and each linear input's XᵀX is accumulated
// (SVD-LLM's protocol: every layer sees the dense model's activations).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/cpu_encoder.h"
#include "compress/calibration.h"
#include "model/encoder.h"
#include "tokenizer/encoder_tokenizer.h"

namespace fsvd {

// One input per non-empty line of `text` (each truncated to `max_tokens`,
// specials included), taken from the end of the text until `count` tokens are
// held (at least one line). Taking the tail leaves the head for evaluation.
// Throws Error naming `where` when the text has no non-empty line.
std::vector<EncoderInput> encoder_calibration_inputs(const EncoderTokenizer& tokenizer, const std::string& text,
                                                     int64_t count, int max_tokens, const std::string& where);

// Width of the rows a linear input of an encoder layer carries (GateUp: the MLP's input).
int64_t encoder_input_dim(const EncoderConfig& config, LinearInput input);

class EncoderCalibration {
 public:
  // Runs the inputs in batches of about `batch_tokens` tokens on the CPU.
  // `dense` must be packed and outlive this object.
  EncoderCalibration(const EncoderModel& dense, std::vector<EncoderInput> inputs, int64_t batch_tokens, int threads);

  // Runs every input once and returns the statistics of layers [first, last),
  // each indexed by LinearInput.
  std::vector<LayerGrams> layer_grams(int first, int last);
  // Bytes layer_grams() holds per layer.
  int64_t bytes_per_layer() const;

  int64_t inputs() const { return static_cast<int64_t>(inputs_.size()); }
  int64_t tokens() const { return tokens_; }
  int64_t batches() const { return static_cast<int64_t>(batches_.size()) - 1; }

 private:
  const EncoderModel& dense_;
  std::vector<EncoderInput> inputs_;
  int64_t tokens_ = 0;
  std::vector<size_t> batches_;  // batch b is inputs [batches_[b], batches_[b + 1])
  CpuEncoder encoder_;
};

}  // namespace fsvd
