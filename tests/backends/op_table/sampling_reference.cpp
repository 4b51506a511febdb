#include "backends/op_table/sampling_reference.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fsvd::optable {

KeptSet cpu_kept_set(const std::vector<float>& logits, const SamplingParams& c) {
  const size_t n = logits.size();
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<std::pair<double, int>> order;  // (weight, id), most probable first
  for (size_t i = 0; i < n; ++i)
    order.emplace_back(std::exp((logits[i] - max) / c.temperature), static_cast<int>(i));
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  auto fp32_error = [](double w) { return w > 0 ? w * (std::abs(std::log(w)) + 4) * 0x1p-22 : 0.0; };
  const size_t k = c.top_k > 0 ? std::min<size_t>(c.top_k, n) : n;
  double total = 0, total_error = 0;
  for (size_t j = 0; j < k; ++j) {
    total += order[j].first;
    total_error += fp32_error(order[j].first);
  }
  const double target = c.top_p * total;
  KeptSet ref{std::vector<Kept>(n, Kept::kOut), std::vector<double>(n, 0.0)};
  double before = 0, before_error = 0, kept_mass = 0;  // of the more probable tokens
  for (size_t j = 0; j < k; ++j) {
    Kept& status = ref.kept[order[j].second];
    const double slack = before_error + c.top_p * total_error + 1e-12 * total;
    if (c.top_p >= 1.0f || j == 0 || before < target - slack)
      status = Kept::kIn;
    else if (before < target + slack)
      status = Kept::kEither;
    if (status == Kept::kIn) kept_mass += order[j].first;
    before += order[j].first;
    before_error += fp32_error(order[j].first);
  }
  for (const auto& [w, id] : order)
    if (ref.kept[id] == Kept::kIn) ref.prob[id] = w / kept_mass;
  return ref;
}

}  // namespace fsvd::optable
