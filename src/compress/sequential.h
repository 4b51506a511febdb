#pragma once
// Sequential calibration: the model is compressed layer by layer, and each
// linear input's statistics are gathered on the rows the partly compressed
// model really feeds it (every earlier layer and this layer's earlier inputs
// already replaced), as GPTQ and SVD-LLM's sequential update do. Two residual
// streams are carried over the calibration tokens, the dense model's and the
// compressed model's, so each layer is run once per stage instead of the whole
// model once per layer.
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "compress/refit.h"
#include "compress/whitening.h"
#include "model/model.h"

namespace fsvd {

struct InputStatistics {
  Gram compressed;                 // X'ᵀX' of the compressed model's rows
  std::optional<CrossGram> cross;  // X'ᵀX against the dense model's rows, when asked for
  // o and down, when asked for: X'ᵀT, T = the dense residual after the linear's
  // add − the compressed residual before it, minus the bias (refit.h).
  std::optional<CrossGram> residual;
};

// The statistics gather() adds to X'ᵀX' (either carries the dense stream too).
struct FitTargets {
  bool cross = false;     // X'ᵀX, every input
  bool residual = false;  // X'ᵀT, o and down
};

class SequentialCalibration {
 public:
  // Windows of `window` tokens (the last one possibly shorter), each from
  // position 0. `dense` (packed) must outlive this object. Memory: per stream,
  // the residual, one layer's attention output and its residual after o's add
  // over every calibration token, tokens × (2·hidden + q_dim) fp32; a stream
  // stopped at down's input (the compressed one always) also keeps the MLP
  // activations, tokens × intermediate.
  SequentialCalibration(const Model& dense, std::vector<int32_t> ids, int window, int threads, FitTargets targets);
  SequentialCalibration(const SequentialCalibration&) = delete;
  SequentialCalibration& operator=(const SequentialCalibration&) = delete;

  // The model being compressed: a copy of the dense one sharing its tensors.
  // Replace the current layer's linears that read an input, and call
  // work().pack_layer(layer()), before gathering the next input.
  Model& work() { return work_; }
  // Statistics of the current layer's next input (q|k|v, o, gate|up, down in
  // that order), from one pass over the windows.
  InputStatistics gather(LinearInput input);
  // Moves both streams past the current layer once its four inputs were gathered.
  void advance();
  int layer() const { return layer_; }

  int64_t tokens() const { return static_cast<int64_t>(tokens_.size()); }
  int window() const { return window_; }
  int64_t windows() const { return (tokens() + window_ - 1) / window_; }

 private:
  // One model's residual stream over the calibration tokens. Each run of the
  // current layer keeps what it stopped at (`reached`), so the next stage
  // resumes there: a stream runs each part of a layer once.
  struct Stream {
    Stream(const Model& model, int window, int threads, int64_t tokens);
    CpuExecutor executor;
    std::vector<float> residual;   // [tokens, hidden] at the current layer's input (its output once `reached` End)
    std::vector<float> attention;  // [tokens, q_dim] the attention output, from reaching O
    std::vector<float> mid;        // [tokens, hidden] the residual after o's add, from reaching GateUp
    std::vector<float> mlp;        // [tokens, intermediate] the MLP activations, from reaching Down
    std::vector<float> rows;       // the input rows the last window produced
    int reached = 0;               // stage of the current layer the runs stopped at: LinearInput, or kEnd
  };
  static constexpr int kEnd = 4;  // past the layer
  // Runs `stream`'s current layer over one window from where it was reached
  // up to `stop` (kEnd: the whole layer), keeping what the run stopped at;
  // `input`'s rows land in stream.rows, the window's residual where the run
  // stopped in scratch_. The caller sets stream.reached once every window ran.
  void rows_of(Stream& stream, LinearInput input, int stop, int64_t start, int64_t n);

  const Model& dense_;
  Model work_;
  std::vector<int32_t> tokens_;
  int window_;
  int layer_ = 0;
  int stage_ = 0;  // the next input of layer_ to gather
  FitTargets targets_;
  std::optional<Stream> dense_stream_;  // with fit targets only
  Stream work_stream_;
  std::vector<float> scratch_, before_, target_;
};

}  // namespace fsvd
