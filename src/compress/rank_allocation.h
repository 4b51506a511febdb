#pragma once
// How many singular directions each compressed matrix keeps.
#include <cstdint>
#include <vector>

namespace fsvd {

// SVD-LLM's rule: the rank whose two factors hold `keep` (0 < keep < 1) of a
// dense [out, in] matrix's parameters, r = int(out·in·keep / (out + in)),
// at least 1.
int64_t uniform_rank(int64_t out, int64_t in, double keep);

// Loss-guided ranks for matrices of one shape (one matrix type across the
// layers), after SVD-LLM v2's idea of spending a type's budget where
// truncation hurts most. `singular_values[i]` are matrix i's (descending,
// whitened when whitening). Each matrix keeps at least 1 and at most
// `max_rank` directions, and the ranks sum to `total` (clamped to what those
// bounds allow), so the type keeps exactly the parameters of the uniform
// ranks when total = count × uniform rank. Beyond the first direction of
// each matrix, the remaining directions are taken greedily in order of
// σ²/Σσ² of their own matrix: the share of that matrix's (whitened) output
// energy the direction carries. Taking the largest shares first minimizes
// the sum over matrices of their relative squared truncation loss
// ||ΔW·L||²/||W·L||² for the budget (each matrix's shares only decrease).
// Ties go to the lower matrix index.
std::vector<int64_t> loss_guided_ranks(const std::vector<std::vector<double>>& singular_values, int64_t total,
                                       int64_t max_rank);

}  // namespace fsvd
