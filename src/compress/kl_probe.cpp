#include "compress/kl_probe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"

namespace fsvd {

KlProbe::KlProbe(const Model& reference, std::vector<int32_t> tokens, int threads)
    : tokens_(std::move(tokens)), threads_(threads) {
  check(!tokens_.empty(), "KlProbe", "no probe tokens");
  const int64_t hidden = reference.config.hidden, n = this->tokens();
  std::vector<float> rows(n * hidden);
  for (int64_t t = 0; t < n; ++t) {
    check(tokens_[t] >= 0 && tokens_[t] < reference.config.vocab, "KlProbe", "token ", tokens_[t],
          " outside the vocabulary");
    std::memcpy(rows.data() + t * hidden, reference.embed.data() + int64_t{tokens_[t]} * hidden, sizeof(float) * hidden);
  }
  reference_ = log_probs(reference, 0, std::move(rows), &layer_inputs_);
}

std::vector<float> KlProbe::log_probs(const Model& m, int first, std::vector<float> rows,
                                     std::vector<std::vector<float>>* inputs) const {
  const int64_t n = tokens();
  CpuExecutor ex(m, static_cast<int>(n), threads_);
  for (int l = first; l < m.config.n_layers; ++l) {
    if (inputs) inputs->push_back(rows);
    ex.forward_layer(rows.data(), n, l, {});
  }
  std::vector<float> logits;
  ex.logits_of(rows.data(), n, logits);
  const int64_t vocab = m.config.vocab;
  for (int64_t r = 0; r < n; ++r) {
    float* row = logits.data() + r * vocab;
    const float top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - top);
    const double norm = top + std::log(sum);
    for (int64_t v = 0; v < vocab; ++v) row[v] = static_cast<float>(row[v] - norm);
  }
  return logits;
}

double KlProbe::kl(const Model& probe, int first_changed) const {
  check(probe.config.vocab * tokens() == static_cast<int64_t>(reference_.size()) &&
            probe.config.n_layers == static_cast<int>(layer_inputs_.size()) &&
            probe.config.hidden * tokens() == static_cast<int64_t>(layer_inputs_[0].size()),
        "KlProbe", "the probe model's shape differs from the reference's");
  check(0 <= first_changed && first_changed < probe.config.n_layers, "KlProbe", "first changed layer ", first_changed,
        " outside the model's ", probe.config.n_layers, " layers");
  const std::vector<float> q = log_probs(probe, first_changed, layer_inputs_[first_changed], nullptr);
  double total = 0;
  for (size_t i = 0; i < q.size(); ++i) total += std::exp(double(reference_[i])) * (double(reference_[i]) - q[i]);
  return total / static_cast<double>(tokens());
}

}  // namespace fsvd
