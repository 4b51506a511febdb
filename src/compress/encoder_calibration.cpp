#include "compress/encoder_calibration.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace fsvd {

std::vector<EncoderInput> encoder_calibration_inputs(const EncoderTokenizer& tokenizer, const std::string& text,
                                                     int64_t count, int max_tokens, const std::string& where) {
  check(count > 0, where, "calibration token count must be positive, got ", count);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(std::move(line));
  }
  check(!lines.empty(), where, "the calibration text has no non-empty line");
  std::vector<EncoderInput> inputs;
  int64_t tokens = 0;
  for (auto it = lines.rbegin(); it != lines.rend() && tokens < count; ++it) {
    inputs.push_back(tokenizer.encode(*it, std::nullopt, max_tokens));
    tokens += static_cast<int64_t>(inputs.back().ids.size());
  }
  std::reverse(inputs.begin(), inputs.end());  // text order
  return inputs;
}

int64_t encoder_input_dim(const EncoderConfig& c, LinearInput input) {
  return input == LinearInput::Down ? c.intermediate : c.hidden;
}

EncoderCalibration::EncoderCalibration(const EncoderModel& dense, std::vector<EncoderInput> inputs,
                                       int64_t batch_tokens, int threads)
    : dense_(dense), inputs_(std::move(inputs)), encoder_(dense, threads) {
  check(!inputs_.empty(), "calibration", "no calibration inputs");
  check(batch_tokens > 0, "calibration", "batch size must be positive, got ", batch_tokens);
  batches_.push_back(0);
  int64_t in_batch = 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const auto len = static_cast<int64_t>(inputs_[i].ids.size());
    if (in_batch > 0 && in_batch + len > batch_tokens) {
      batches_.push_back(i);
      in_batch = 0;
    }
    in_batch += len;
    tokens_ += len;
  }
  batches_.push_back(inputs_.size());
}

int64_t EncoderCalibration::bytes_per_layer() const {
  return layer_gram_bytes([&](LinearInput input) { return encoder_input_dim(dense_.config, input); });
}

std::vector<LayerGrams> EncoderCalibration::layer_grams(int first, int last) {
  std::vector<float> states;
  std::vector<int64_t> offsets;
  const std::span<const EncoderInput> all(inputs_);
  return observe_layer_grams(
      first, last, dense_.config.n_layers, "encoder",
      [&](LinearInput input) { return encoder_input_dim(dense_.config, input); },
      [&](LinearInputObserver o) { encoder_.set_observer(std::move(o)); },
      [&] {
        for (size_t b = 0; b + 1 < batches_.size(); ++b)
          encoder_.forward(all.subspan(batches_[b], batches_[b + 1] - batches_[b]), states, offsets);
      });
}

}  // namespace fsvd
