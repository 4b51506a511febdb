#include "compress/sequential.h"

#include <algorithm>
#include <cstring>

#include "compress/calibration.h"
#include "core/error.h"

namespace fsvd {

SequentialCalibration::Stream::Stream(const Model& model, int window, int threads, int64_t tokens)
    : executor(model, window, threads),
      residual(tokens * model.config.hidden),
      attention(tokens * model.config.q_dim()) {}

SequentialCalibration::SequentialCalibration(const Model& dense, std::vector<int32_t> ids, int window, int threads,
                                             FitTargets targets)
    : dense_(dense),
      work_(dense),
      tokens_(std::move(ids)),
      window_(window),
      targets_(targets),
      work_stream_(work_, window, threads, static_cast<int64_t>(tokens_.size())) {
  check(!tokens_.empty(), "calibration", "no calibration tokens");
  const int64_t hidden = dense.config.hidden;
  for (int64_t t = 0; t < tokens(); ++t)
    std::memcpy(work_stream_.residual.data() + t * hidden, dense.embed.data() + int64_t{tokens_[t]} * hidden,
                sizeof(float) * hidden);
  if (targets.cross || targets.residual) {
    dense_stream_.emplace(dense, window, threads, tokens());
    dense_stream_->residual = work_stream_.residual;
  }
}

void SequentialCalibration::rows_of(Stream& stream, LinearInput input, std::optional<LinearInput> stop, int64_t start,
                                    int64_t n) {
  const int64_t hidden = dense_.config.hidden, q_dim = dense_.config.q_dim();
  const int64_t dim = linear_input_dim(dense_.config, input);
  float* attention = stream.attention.data() + start * q_dim;
  stream.executor.set_observer([&](int, LinearInput seen, const float* rows, int64_t count, int64_t) {
    if (seen == input) stream.rows.assign(rows, rows + count * dim);
  });
  // The layer runs on a copy of the window's residual: stopping early leaves it half-updated.
  scratch_.assign(stream.residual.begin() + start * hidden, stream.residual.begin() + (start + n) * hidden);
  const bool after_attention = input == LinearInput::GateUp || input == LinearInput::Down;
  stream.executor.forward_layer(scratch_.data(), n, layer_, {stop, after_attention ? attention : nullptr});
  stream.executor.set_observer(nullptr);
  if (input == LinearInput::O) std::copy(stream.rows.begin(), stream.rows.end(), attention);
}

InputStatistics SequentialCalibration::gather(LinearInput input) {
  check(layer_ < dense_.config.n_layers, "SequentialCalibration", "every layer was already calibrated");
  check(static_cast<int>(input) == stage_, "SequentialCalibration", "layer ", layer_, "'s inputs are gathered in order");
  const int64_t dim = linear_input_dim(dense_.config, input), hidden = dense_.config.hidden;
  // o and down add into the residual: the dense run goes on past the add (to
  // gate|up's input, or to the layer's end) for the residual target.
  const bool adds = input == LinearInput::O || input == LinearInput::Down;
  const bool residual = targets_.residual && adds;
  const std::optional<LinearInput> dense_stop =
      !residual ? std::optional(input) : input == LinearInput::O ? std::optional(LinearInput::GateUp) : std::nullopt;
  const Tensor& bias = (dense_.layers[layer_].*(input == LinearInput::O ? &Layer::o : &Layer::down)).bias;
  InputStatistics stats{Gram(dim), std::nullopt, std::nullopt};
  if (targets_.cross) stats.cross.emplace(dim, dim);
  if (residual) stats.residual.emplace(dim, hidden);
  for (int64_t start = 0; start < tokens(); start += window_) {
    const int64_t n = std::min<int64_t>(window_, tokens() - start);
    rows_of(work_stream_, input, input, start, n);
    stats.compressed.add(work_stream_.rows.data(), n);
    if (!stats.cross && !residual) continue;
    before_ = scratch_;  // the compressed residual before this input's linear adds
    rows_of(*dense_stream_, input, dense_stop, start, n);
    if (stats.cross) stats.cross->add(work_stream_.rows.data(), dense_stream_->rows.data(), n);
    if (residual) {
      target_.resize(n * hidden);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t h = 0; h < hidden; ++h)
          target_[t * hidden + h] = scratch_[t * hidden + h] - before_[t * hidden + h] - (bias.empty() ? 0.f : bias.data()[h]);
      stats.residual->add(work_stream_.rows.data(), target_.data(), n);
    }
  }
  ++stage_;
  return stats;
}

void SequentialCalibration::advance() {
  check(stage_ == 4, "SequentialCalibration", "layer ", layer_, " advanced before its four inputs were gathered");
  const int64_t hidden = dense_.config.hidden, q_dim = dense_.config.q_dim();
  for (Stream* s : {&work_stream_, dense_stream_ ? &*dense_stream_ : nullptr}) {
    if (!s) continue;
    for (int64_t start = 0; start < tokens(); start += window_) {
      const int64_t n = std::min<int64_t>(window_, tokens() - start);
      s->executor.forward_layer(s->residual.data() + start * hidden, n, layer_,
                                {std::nullopt, s->attention.data() + start * q_dim});
    }
  }
  ++layer_;
  stage_ = 0;
}

}  // namespace fsvd
