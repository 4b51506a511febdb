#include "compress/rank_allocation.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "core/error.h"

namespace fsvd {

int64_t uniform_rank(int64_t out, int64_t in, double keep) {
  check(out > 0 && in > 0, "uniform_rank", "empty matrix [", out, ", ", in, "]");
  check(keep > 0 && keep < 1, "uniform_rank", "kept parameter ratio ", keep, " is outside (0, 1)");
  const auto r = static_cast<int64_t>(static_cast<double>(out) * static_cast<double>(in) * keep /
                                      static_cast<double>(out + in));
  return std::max<int64_t>(r, 1);
}

std::vector<int64_t> loss_guided_ranks(const std::vector<std::vector<double>>& singular_values, int64_t total,
                                       int64_t max_rank) {
  const int64_t count = static_cast<int64_t>(singular_values.size());
  check(max_rank >= 1, "loss_guided_ranks", "maximum rank ", max_rank, " is below 1");
  std::vector<double> energy(count, 0.0);
  for (int64_t i = 0; i < count; ++i) {
    check(static_cast<int64_t>(singular_values[i].size()) >= max_rank, "loss_guided_ranks", "matrix ", i,
          " has ", singular_values[i].size(), " singular values, fewer than the maximum rank ", max_rank);
    for (double s : singular_values[i]) energy[i] += s * s;
  }
  auto share = [&](int64_t i, int64_t j) {
    const double s = singular_values[i][j];
    return energy[i] > 0 ? s * s / energy[i] : 0.0;
  };

  std::vector<int64_t> ranks(count, 1);
  // Max-heap of each matrix's next direction: (share, -matrix) so ties pick the lower index.
  std::priority_queue<std::tuple<double, int64_t>> next;
  for (int64_t i = 0; i < count; ++i)
    if (max_rank > 1) next.emplace(share(i, 1), -i);
  for (int64_t left = total - count; left > 0 && !next.empty(); --left) {
    const int64_t i = -std::get<1>(next.top());
    next.pop();
    if (++ranks[i] < max_rank) next.emplace(share(i, ranks[i]), -i);
  }
  return ranks;
}

}  // namespace fsvd
