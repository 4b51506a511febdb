#include "compress/kl_probe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <omp.h>

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
  std::vector<double> log_norm;
  reference_ = logits(reference, 0, std::move(rows), log_norm, &layer_inputs_);
  const int64_t vocab = reference.config.vocab;
  mass_.assign(n, 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t v = 0; v < vocab; ++v) {
      float& x = reference_[r * vocab + v];
      const double log_p = x - log_norm[r];
      x = static_cast<float>(std::exp(log_p));
      mass_[r] += x;
      reference_neg_entropy_ += x * log_p;
    }
}

std::vector<float> KlProbe::logits(const Model& m, int first, std::vector<float> rows, std::vector<double>& log_norm,
                                   std::vector<std::vector<float>>* inputs) const {
  const int64_t n = tokens();
  CpuExecutor ex(m, static_cast<int>(n), threads_);
  for (int l = first; l < m.config.n_layers; ++l) {
    if (inputs) inputs->push_back(rows);
    ex.forward_layer(rows.data(), n, l, {});
  }
  std::vector<float> out;
  ex.logits_of(rows.data(), n, out);
  const int64_t vocab = m.config.vocab;
  log_norm.assign(n, 0.0);
#pragma omp parallel for schedule(static) num_threads(threads_ > 0 ? threads_ : omp_get_num_procs())
  for (int64_t r = 0; r < n; ++r) {
    const float* row = out.data() + r * vocab;
    const float top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - top);
    log_norm[r] = top + std::log(sum);
  }
  return out;
}

double KlProbe::kl(const Model& probe, int first_changed) const {
  check(probe.config.vocab * tokens() == static_cast<int64_t>(reference_.size()) &&
            probe.config.n_layers == static_cast<int>(layer_inputs_.size()) &&
            probe.config.hidden * tokens() == static_cast<int64_t>(layer_inputs_[0].size()),
        "KlProbe", "the probe model's shape differs from the reference's");
  check(0 <= first_changed && first_changed < probe.config.n_layers, "KlProbe", "first changed layer ", first_changed,
        " outside the model's ", probe.config.n_layers, " layers");
  std::vector<double> log_norm;
  const std::vector<float> q = logits(probe, first_changed, layer_inputs_[first_changed], log_norm, nullptr);
  double total = reference_neg_entropy_;
  for (size_t r = 0; r < log_norm.size(); ++r) total += mass_[r] * log_norm[r];
  for (size_t i = 0; i < q.size(); ++i) total -= double(reference_[i]) * q[i];
  return total / static_cast<double>(tokens());
}

}  // namespace fsvd
