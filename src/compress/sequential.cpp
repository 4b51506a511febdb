#include "compress/sequential.h"

#include <algorithm>
#include <cstring>

#include "compress/calibration.h"
#include "core/error.h"

namespace fsvd {

SequentialCalibration::Stream::Stream(const Model& model, int window, int threads, int64_t tokens)
    : executor(model, window, threads),
      residual(tokens * model.config.hidden),
      attention(tokens * model.config.q_dim()),
      mid(tokens * model.config.hidden) {}

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

void SequentialCalibration::rows_of(Stream& stream, LinearInput input, int stop, int64_t start, int64_t n) {
  const ModelConfig& c = dense_.config;
  const int from = stream.reached;
  const int64_t at = start * c.hidden;
  constexpr int kO = static_cast<int>(LinearInput::O), kGateUp = static_cast<int>(LinearInput::GateUp),
                kDown = static_cast<int>(LinearInput::Down);
  if (stop == kDown) stream.mlp.resize(tokens() * c.intermediate);
  stream.executor.set_observer([&](int, LinearInput seen, const float* rows, int64_t count, int64_t width) {
    if (seen == input) stream.rows.assign(rows, rows + count * width);
    // What a later run resumes from: the o input or the down input it stopped at.
    if (static_cast<int>(seen) == stop && (seen == LinearInput::O || seen == LinearInput::Down))
      std::copy(rows, rows + count * width, (seen == LinearInput::O ? stream.attention : stream.mlp).data() + start * width);
  });
  // The layer runs on a copy of the window's residual: stopping early leaves it half-updated.
  const std::vector<float>& residual = from >= kGateUp ? stream.mid : stream.residual;
  scratch_.assign(residual.begin() + at, residual.begin() + at + n * c.hidden);
  const float* rows = from == kO ? stream.attention.data() + start * c.q_dim()
                      : from == kDown ? stream.mlp.data() + start * c.intermediate
                                      : nullptr;
  stream.executor.forward_layer(
      scratch_.data(), n, layer_,
      {stop == kEnd ? std::nullopt : std::optional(LinearInput(stop)),
       from == 0 ? std::nullopt : std::optional(LinearInput(from)), rows});
  stream.executor.set_observer(nullptr);
  if (from < kGateUp && (stop == kGateUp || stop == kDown))
    std::copy(scratch_.begin(), scratch_.end(), stream.mid.begin() + at);
  if (stop == kEnd) std::copy(scratch_.begin(), scratch_.end(), stream.residual.begin() + at);
}

InputStatistics SequentialCalibration::gather(LinearInput input) {
  check(layer_ < dense_.config.n_layers, "SequentialCalibration", "every layer was already calibrated");
  check(static_cast<int>(input) == stage_, "SequentialCalibration", "layer ", layer_, "'s inputs are gathered in order");
  const int64_t dim = linear_input_dim(dense_.config, input), hidden = dense_.config.hidden;
  // o and down add into the residual: the dense run goes on past the add (to
  // gate|up's input, or to the layer's end) for the residual target.
  const bool adds = input == LinearInput::O || input == LinearInput::Down;
  const bool residual = targets_.residual && adds;
  const int dense_stop = !residual ? static_cast<int>(input)
                         : input == LinearInput::O ? static_cast<int>(LinearInput::GateUp)
                                                   : kEnd;
  const Tensor& bias = (dense_.layers[layer_].*(input == LinearInput::O ? &Layer::o : &Layer::down)).bias;
  InputStatistics stats{Gram(dim), std::nullopt, std::nullopt};
  if (targets_.cross) stats.cross.emplace(dim, dim);
  if (residual) stats.residual.emplace(dim, hidden);
  for (int64_t start = 0; start < tokens(); start += window_) {
    const int64_t n = std::min<int64_t>(window_, tokens() - start);
    rows_of(work_stream_, input, static_cast<int>(input), start, n);
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
  work_stream_.reached = static_cast<int>(input);
  if (stats.cross || residual) dense_stream_->reached = dense_stop;
  ++stage_;
  return stats;
}

void SequentialCalibration::advance() {
  check(stage_ == 4, "SequentialCalibration", "layer ", layer_, " advanced before its four inputs were gathered");
  for (Stream* s : {&work_stream_, dense_stream_ ? &*dense_stream_ : nullptr}) {
    if (!s) continue;
    if (s->reached != kEnd)
      for (int64_t start = 0; start < tokens(); start += window_)
        rows_of(*s, LinearInput::Down, kEnd, start, std::min<int64_t>(window_, tokens() - start));
    s->reached = 0;
  }
  ++layer_;
  stage_ = 0;
}

}  // namespace fsvd
