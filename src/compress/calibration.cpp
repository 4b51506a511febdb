#include "compress/calibration.h"

#include <algorithm>
#include <span>

#include "core/error.h"

namespace fsvd {
namespace {

constexpr LinearInput kInputs[] = {LinearInput::Qkv, LinearInput::O, LinearInput::GateUp, LinearInput::Down};

}  // namespace

int64_t linear_input_dim(const ModelConfig& c, LinearInput input) {
  switch (input) {
    case LinearInput::Qkv:
    case LinearInput::GateUp: return c.hidden;
    case LinearInput::O: return c.q_dim();
    case LinearInput::Down: return c.intermediate;
  }
  return 0;
}

std::vector<int32_t> calibration_tokens(const Tokenizer& tokenizer, const std::string& text, int64_t count) {
  check(count > 0, "calibration", "token count must be positive, got ", count);
  std::vector<int32_t> ids = tokenizer.encode(text, tokenizer.adds_bos());
  if (static_cast<int64_t>(ids.size()) > count) ids.erase(ids.begin(), ids.end() - count);
  return ids;
}

Calibration::Calibration(const Model& dense, std::vector<int32_t> tokens, int window, int threads)
    : dense_(dense), tokens_(std::move(tokens)), window_(window), executor_(dense, window, threads) {
  check(!tokens_.empty(), "calibration", "no calibration tokens");
}

std::vector<LayerGrams> observe_layer_grams(int first, int last, int layers, const char* what,
                                            const LinearInputDim& dim,
                                            const std::function<void(LinearInputObserver)>& set_observer,
                                            const std::function<void()>& forward) {
  check(0 <= first && first < last && last <= layers, "calibration", "layer range [", first, ", ", last,
        ") outside the ", what, "'s ", layers, " layers");
  std::vector<LayerGrams> grams(last - first);
  for (LayerGrams& g : grams)
    for (LinearInput input : kInputs) g.emplace_back(dim(input));
  set_observer([&](int layer, LinearInput input, const float* rows, int64_t n, int64_t) {
    if (layer >= first && layer < last) grams[layer - first][static_cast<int>(input)].add(rows, n);
  });
  forward();
  set_observer(nullptr);
  return grams;
}

int64_t layer_gram_bytes(const LinearInputDim& dim) {
  int64_t total = 0;
  for (LinearInput input : kInputs) total += dim(input) * dim(input) * static_cast<int64_t>(sizeof(double));
  return total;
}

int64_t Calibration::bytes_per_layer() const {
  return layer_gram_bytes([&](LinearInput input) { return linear_input_dim(dense_.config, input); });
}

std::vector<LayerGrams> Calibration::layer_grams(int first, int last) {
  std::vector<float> logits;
  const std::span<const int32_t> all(tokens_);
  return observe_layer_grams(
      first, last, dense_.config.n_layers, "model",
      [&](LinearInput input) { return linear_input_dim(dense_.config, input); },
      [&](LinearInputObserver o) { executor_.set_observer(std::move(o)); },
      [&] {
        for (int64_t start = 0; start < tokens(); start += window_)
          executor_.forward(all.subspan(start, std::min<int64_t>(window_, tokens() - start)), 0, false, logits);
      });
}

}  // namespace fsvd
