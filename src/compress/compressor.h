#pragma once
// Compresses a dense model into low-rank factors: SVD-LLM's truncation-aware
// whitening (or plain SVD as a baseline), optionally sequential with a
// least-squares re-fit, under uniform, loss-guided or budgeted ranks. Every
// q, k, v, o, gate, up and down becomes first [r, in], second [out, r] (or,
// under a budget, may stay dense); embeddings, norms, biases and lm_head stay
// as they are (shared with the dense model, which is never modified).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compress/sensitivity.h"
#include "model/model.h"

namespace fsvd {

enum class CompressMethod { Whiten, Svd };
enum class RankAllocation { Uniform, Loss, Budget };

struct CompressOptions {
  // The model's kept parameter fraction, in (0, 1): compressed parameters /
  // dense parameters, both counted whole (Model::unique_params). What is never
  // compressed (embeddings, lm_head, norms, biases) counts in both, so the
  // matrices keep less: (keep·dense − fixed) / matrix parameters of them.
  double keep = 0.6;
  CompressMethod method = CompressMethod::Whiten;
  RankAllocation allocation = RankAllocation::Uniform;
  // Whitening only: gather each layer's statistics on the partly compressed
  // model's rows, layer by layer (compress/sequential.h), instead of on the
  // dense model's. Dense statistics (and the statistics file) still serve
  // loss allocation's first pass.
  bool sequential = false;
  // Sequential only: fit every matrix (low-rank or kept dense) to the dense
  // layer's outputs on the dense rows instead of to its own weight on the
  // compressed rows (compress/refit.h), with ridge α on the statistics.
  bool refit = false;
  // Sequential only: fit o and down (low-rank or kept dense) to the dense
  // model's residual stream after their add (compress/refit.h), so that their
  // output also cancels the error the residual already carries; for them it
  // replaces `refit`. Ridge α as for `refit`.
  bool refit_residual = false;
  double ridge = 1e-3;
  // Budget allocation: how sensitivities are probed (compress/sensitivity.h),
  // and the calibration tokens (the first of the slice) the probes score, one window.
  SensitivityProbes sensitivity = SensitivityProbes::PerMatrix;
  int probe_tokens = 256;
  // Budget allocation: no matrix keeps less than this fraction of its uniform
  // rank, where its sensitivity was probed (loss does not stay linear in the
  // dropped energy far below it).
  double min_rank_fraction = 0.5;
  int window = 0;   // calibration tokens per forward; 0: min(model context, 2048)
  int threads = 0;  // CPU threads, 0: all
  // Calibration statistics held at once: as many layers as fit (at least one);
  // each calibration pass over the text serves that many layers.
  int64_t stats_budget_bytes = int64_t{2} << 30;
  // Whitening only: a file of every layer's statistics (compress/gram_store.h),
  // read when it exists, else computed once and written, then read back layer by
  // layer. Lets compressions at other ratios or allocations skip calibration.
  std::string stats_path;
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
};

struct Compressed {
  Model model;  // packed and validated
  // method, keep ratio, allocation, calibration, per-matrix ranks and
  // relative truncation losses, parameter counts.
  nlohmann::json provenance;
};

// `calibration` is the token sequence whitening runs the dense model over
// (ignored by plain SVD). Throws Error for a model with low-rank linears,
// options out of range, or whitening without calibration tokens.
Compressed compress_model(const Model& dense, const std::vector<int32_t>& calibration, const CompressOptions& options);

std::string method_name(CompressMethod method);
std::string allocation_name(RankAllocation allocation);

}  // namespace fsvd
