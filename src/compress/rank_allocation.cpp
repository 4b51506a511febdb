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

std::vector<int64_t> budgeted_ranks(const std::vector<MatrixSpectrum>& matrices, int64_t budget) {
  const int64_t count = static_cast<int64_t>(matrices.size());
  auto break_even = [&](int64_t i) { return matrices[i].out * matrices[i].in / (matrices[i].out + matrices[i].in); };
  std::vector<int64_t> ranks(count);
  std::vector<double> dropped(count, 0.0);  // Σ σ² beyond the current rank
  for (int64_t i = 0; i < count; ++i) {
    const MatrixSpectrum& m = matrices[i];
    check(m.out > 0 && m.in > 0 && static_cast<int64_t>(m.singular_values.size()) == std::min(m.out, m.in),
          "budgeted_ranks", "matrix ", i, " [", m.out, ", ", m.in, "] has ", m.singular_values.size(),
          " singular values");
    check(m.sensitivity >= 0, "budgeted_ranks", "matrix ", i, " has a negative sensitivity");
    check(m.out * m.in >= m.out + m.in, "budgeted_ranks", "matrix ", i, " [", m.out, ", ", m.in,
          "] is too small to factor");
    check(m.min_rank >= 1 && m.min_rank <= break_even(i), "budgeted_ranks", "matrix ", i, " minimum rank ",
          m.min_rank, " outside [1, ", break_even(i), "]");
    ranks[i] = m.min_rank;
    for (size_t j = m.min_rank; j < m.singular_values.size(); ++j)
      dropped[i] += m.singular_values[j] * m.singular_values[j];
    budget -= m.min_rank * (m.out + m.in);
  }
  check(budget >= 0, "budgeted_ranks", "the parameter budget cannot give each of the ", count,
        " matrices its minimum rank (", -budget, " parameters short)");

  // The next item of matrix i: (value per parameter, -i) on a max-heap, ties to the lower index; its cost apart.
  auto cost = [&](int64_t i) {
    const MatrixSpectrum& m = matrices[i];
    return ranks[i] < break_even(i) ? m.out + m.in : m.out * m.in - ranks[i] * (m.out + m.in);
  };
  auto value = [&](int64_t i) {
    const MatrixSpectrum& m = matrices[i];
    const double s = ranks[i] < break_even(i) ? m.singular_values[ranks[i]] : 0.0;
    const double gain = m.sensitivity * (ranks[i] < break_even(i) ? s * s : dropped[i]);
    return gain / static_cast<double>(std::max<int64_t>(cost(i), 1));
  };
  std::priority_queue<std::tuple<double, int64_t>> next;
  for (int64_t i = 0; i < count; ++i)
    if (value(i) > 0) next.emplace(value(i), -i);
  while (!next.empty()) {
    const int64_t i = -std::get<1>(next.top());
    next.pop();
    if (cost(i) > budget) continue;  // its later items cost as much or more: the matrix is done
    budget -= cost(i);
    if (ranks[i] == break_even(i)) {
      ranks[i] = -1;
      continue;
    }
    const double s = matrices[i].singular_values[ranks[i]];
    dropped[i] -= s * s;
    ++ranks[i];
    if (value(i) > 0) next.emplace(value(i), -i);
  }
  return ranks;
}

}  // namespace fsvd
