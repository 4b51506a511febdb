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
                                             bool cross)
    : dense_(dense),
      work_(dense),
      tokens_(std::move(ids)),
      window_(window),
      work_stream_(work_, window, threads, static_cast<int64_t>(tokens_.size())) {
  check(!tokens_.empty(), "calibration", "no calibration tokens");
  const int64_t hidden = dense.config.hidden;
  for (int64_t t = 0; t < tokens(); ++t)
    std::memcpy(work_stream_.residual.data() + t * hidden, dense.embed.data() + int64_t{tokens_[t]} * hidden,
                sizeof(float) * hidden);
  if (cross) {
    dense_stream_.emplace(dense, window, threads, tokens());
    dense_stream_->residual = work_stream_.residual;
  }
}

void SequentialCalibration::rows_of(Stream& stream, LinearInput input, int64_t start, int64_t n) {
  const int64_t hidden = dense_.config.hidden, q_dim = dense_.config.q_dim();
  const int64_t dim = linear_input_dim(dense_.config, input);
  float* attention = stream.attention.data() + start * q_dim;
  stream.executor.set_observer([&](int, LinearInput seen, const float* rows, int64_t count, int64_t) {
    if (seen == input) stream.rows.assign(rows, rows + count * dim);
  });
  // The layer runs on a copy of the window's residual: stopping early leaves it half-updated.
  scratch_.assign(stream.residual.begin() + start * hidden, stream.residual.begin() + (start + n) * hidden);
  const bool after_attention = input == LinearInput::GateUp || input == LinearInput::Down;
  stream.executor.forward_layer(scratch_.data(), n, layer_, {input, after_attention ? attention : nullptr});
  stream.executor.set_observer(nullptr);
  if (input == LinearInput::O) std::copy(stream.rows.begin(), stream.rows.end(), attention);
}

InputStatistics SequentialCalibration::gather(LinearInput input) {
  check(layer_ < dense_.config.n_layers, "SequentialCalibration", "every layer was already calibrated");
  check(static_cast<int>(input) == stage_, "SequentialCalibration", "layer ", layer_, "'s inputs are gathered in order");
  const int64_t dim = linear_input_dim(dense_.config, input);
  InputStatistics stats{Gram(dim), std::nullopt};
  if (dense_stream_) stats.cross.emplace(dim);
  for (int64_t start = 0; start < tokens(); start += window_) {
    const int64_t n = std::min<int64_t>(window_, tokens() - start);
    rows_of(work_stream_, input, start, n);
    stats.compressed.add(work_stream_.rows.data(), n);
    if (dense_stream_) {
      rows_of(*dense_stream_, input, start, n);
      stats.cross->add(work_stream_.rows.data(), dense_stream_->rows.data(), n);
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
