#include "compress/kl_probe.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"

namespace fsvd {

KlProbe::KlProbe(const Model& reference, std::vector<int32_t> tokens, int threads)
    : tokens_(std::move(tokens)), threads_(threads) {
  check(!tokens_.empty(), "KlProbe", "no probe tokens");
  reference_ = log_probs(reference);
}

std::vector<float> KlProbe::log_probs(const Model& m) const {
  CpuExecutor ex(m, static_cast<int>(tokens_.size()), threads_);
  std::vector<float> logits;
  ex.forward(tokens_, 0, true, logits);
  const int64_t vocab = m.config.vocab;
  for (int64_t r = 0; r < tokens(); ++r) {
    float* row = logits.data() + r * vocab;
    const float top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - top);
    const double norm = top + std::log(sum);
    for (int64_t v = 0; v < vocab; ++v) row[v] = static_cast<float>(row[v] - norm);
  }
  return logits;
}

double KlProbe::kl(const Model& probe) const {
  const std::vector<float> q = log_probs(probe);
  check(q.size() == reference_.size(), "KlProbe", "the probe model's vocabulary differs from the reference's");
  double total = 0;
  for (size_t i = 0; i < q.size(); ++i) total += std::exp(double(reference_[i])) * (double(reference_[i]) - q[i]);
  return total / static_cast<double>(tokens());
}

}  // namespace fsvd
