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

// One compressible matrix for budgeted_ranks().
struct MatrixSpectrum {
  int64_t out = 0, in = 0;
  std::vector<double> singular_values;  // of W·L (whitened), descending, min(out, in) of them
  double sensitivity = 0;               // predicted loss per unit of squared whitened error, >= 0
  int64_t min_rank = 1;                 // the least it keeps, in [1, int(out·in/(out+in))]
};

// A rank for every matrix under one parameter budget shared by all of them,
// or -1 where the matrix stays dense. The predicted loss of matrix i at rank r
// is sensitivity_i · Σ_{j>=r} σ_ij²: its dropped whitened energy (the exact
// squared output error on the calibration rows), weighted by how much that
// error costs downstream. Every matrix keeps at least rank 1; the rest of the
// budget goes greedily to whatever removes the most predicted loss per
// parameter: the next direction of a matrix (out + in parameters) or, once a
// matrix is at its break-even rank int(out·in/(out+in)), storing it dense (the
// remaining parameters up to out·in). Values per parameter fall along each
// matrix's directions, so the greedy choice is optimal up to the last item
// that did not fit. Items of zero value are not taken. Every matrix starts
// at its min_rank (1 in the description above); throws Error when the budget
// cannot pay for those.
std::vector<int64_t> budgeted_ranks(const std::vector<MatrixSpectrum>& matrices, int64_t budget);

}  // namespace fsvd
