#pragma once
// Calibration for whitening: the dense model runs over calibration text and
// each linear input's XᵀX is accumulated. Every layer sees the dense model's
// own activations (SVD-LLM's protocol), not those of already-compressed layers.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "compress/whitening.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

// The default calibration slice: the last `count` tokens of `text` encoded
// whole (BOS as the tokenizer adds it), all of them when the text is shorter.
// Taking the tail leaves the head of the same file free for evaluation.
std::vector<int32_t> calibration_tokens(const Tokenizer& tokenizer, const std::string& text, int64_t count);

// Width of the rows a linear input carries.
int64_t linear_input_dim(const ModelConfig& config, LinearInput input);

// XᵀX of one layer's linear inputs, indexed by LinearInput.
using LayerGrams = std::vector<Gram>;

// Width of each linear input's rows, for one model.
using LinearInputDim = std::function<int64_t(LinearInput)>;

// The Grams of layers [first, last) of a `what` ("model", "encoder") of
// `layers` layers: `set_observer` installs the hook that feeds them, `forward`
// runs the calibration text once, then the hook is removed. What the decoder
// and encoder calibrations share.
std::vector<LayerGrams> observe_layer_grams(int first, int last, int layers, const char* what,
                                            const LinearInputDim& dim,
                                            const std::function<void(LinearInputObserver)>& set_observer,
                                            const std::function<void()>& forward);
// Bytes observe_layer_grams holds per layer.
int64_t layer_gram_bytes(const LinearInputDim& dim);

class Calibration {
 public:
  // Windows of `window` tokens (the last one possibly shorter), each run from
  // position 0 on the CPU. `dense` must outlive this object.
  Calibration(const Model& dense, std::vector<int32_t> tokens, int window, int threads);

  // Runs every window once and returns the statistics of layers [first, last).
  std::vector<LayerGrams> layer_grams(int first, int last);
  // Bytes layer_grams() holds per layer.
  int64_t bytes_per_layer() const;

  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }
  int window() const { return window_; }
  int64_t windows() const { return (tokens() + window_ - 1) / window_; }

 private:
  const Model& dense_;
  std::vector<int32_t> tokens_;
  int window_;
  CpuExecutor executor_;
};

}  // namespace fsvd
