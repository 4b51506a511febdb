#include "backends/encoder_executor.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/linear_ops.h"
#include "backends/cpu/ops.h"
#include "core/error.h"

namespace fsvd {

EncoderExecutor::EncoderExecutor(const EncoderModel& model) : model_(model) {
  model.validate();
  for (const EncoderLayer& l : model.layers)
    check(l.qkv.parts.size() == 3, model.source, "encoder is not packed (EncoderModel::pack() must run first)");
}

std::vector<int64_t> EncoderExecutor::check_batch(std::span<const EncoderInput> batch) const {
  const EncoderConfig& c = model_.config;
  std::vector<int64_t> offsets{0};
  for (size_t i = 0; i < batch.size(); ++i) {
    const EncoderInput& in = batch[i];
    const std::string where = "encoder input " + std::to_string(i);
    check(!in.ids.empty() && in.ids.size() == in.type_ids.size(), where, in.ids.size(), " ids and ",
          in.type_ids.size(), " token types (must be equal and non-zero)");
    check(static_cast<int64_t>(in.ids.size()) <= c.max_tokens(), where, in.ids.size(),
          " tokens exceed the model's ", c.max_tokens(), " positions");
    for (size_t t = 0; t < in.ids.size(); ++t) {
      check(in.ids[t] >= 0 && in.ids[t] < c.vocab, where, "token id ", in.ids[t], " is outside the vocabulary of ",
            c.vocab);
      check(in.type_ids[t] >= 0 && in.type_ids[t] < std::max(c.type_vocab, 1), where, "token type ", in.type_ids[t],
            " is outside the model's ", c.type_vocab, " types");
    }
    offsets.push_back(offsets.back() + static_cast<int64_t>(in.ids.size()));
  }
  return offsets;
}

void EncoderExecutor::enqueue(std::span<const EncoderInput> batch) {
  std::vector<int64_t> offsets;
  forward(batch, scratch_, offsets);
}

std::vector<float> EncoderExecutor::embed(std::span<const EncoderInput> batch) {
  const int64_t d = model_.config.hidden;
  std::vector<float> states;
  std::vector<int64_t> offsets;
  forward(batch, states, offsets);
  std::vector<float> out(batch.size() * d);
  for (size_t i = 0; i < batch.size(); ++i) {
    const float* rows = states.data() + offsets[i] * d;
    const int64_t len = offsets[i + 1] - offsets[i];
    float* o = out.data() + i * d;
    switch (model_.pooling) {
      case Pooling::cls:
        std::copy(rows, rows + d, o);
        break;
      case Pooling::mean:
        for (int64_t j = 0; j < d; ++j) {
          double sum = 0;
          for (int64_t t = 0; t < len; ++t) sum += rows[t * d + j];
          o[j] = static_cast<float>(sum / static_cast<double>(len));
        }
        break;
      case Pooling::max:
        for (int64_t j = 0; j < d; ++j) {
          o[j] = rows[j];
          for (int64_t t = 1; t < len; ++t) o[j] = std::max(o[j], rows[t * d + j]);
        }
        break;
    }
    if (model_.normalize) cpu::l2_normalize(o, d);
  }
  return out;
}

// The head is two small products on `batch` rows: the host runs it for every backend.
std::vector<float> EncoderExecutor::classify(std::span<const EncoderInput> batch) {
  const ClassifierHead& head = model_.classifier;
  check(!head.empty(), model_.source, "is not a sequence-classification model (no classifier head)");
  const int64_t d = model_.config.hidden, labels = static_cast<int64_t>(head.labels.size());
  std::vector<float> states;
  std::vector<int64_t> offsets;
  forward(batch, states, offsets);
  const int64_t b = static_cast<int64_t>(batch.size());
  std::vector<float> first(b * d), pre(b * d), logits(b * labels);
  for (int64_t i = 0; i < b; ++i)
    std::copy(states.data() + offsets[i] * d, states.data() + (offsets[i] + 1) * d, first.data() + i * d);
  cpu::apply_linear(head.pre, first.data(), b, pre.data(), d, false, scratch_);
  for (float& x : pre) x = head.activation == ClassifierHead::Activation::tanh ? std::tanh(x) : std::max(x, 0.0f);
  cpu::apply_linear(head.out, pre.data(), b, logits.data(), labels, false, scratch_);
  return logits;
}

}  // namespace fsvd
