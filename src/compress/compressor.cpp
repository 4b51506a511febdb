#include "compress/compressor.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

#include "compress/calibration.h"
#include "compress/gram_store.h"
#include "compress/kl_probe.h"
#include "compress/matrix_kinds.h"
#include "compress/parallel_jobs.h"
#include "compress/rank_allocation.h"
#include "compress/refit.h"
#include "compress/sensitivity.h"
#include "compress/sequential.h"
#include "compress/whitening.h"
#include "core/error.h"

namespace fsvd {
namespace {

constexpr const char* kInputNames[] = {"qkv", "o", "gate_up", "down"};  // by LinearInput

// One whitening per linear input of a layer, indexed by LinearInput.
using LayerWhitening = std::vector<Whitening>;

void report(const CompressOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

// Calls take(layer, statistics) for every layer in order: the statistics of
// as many layers as fit the budget are gathered per pass over the text.
template <typename Take>
void gather_statistics(Calibration& calibration, int layers, const CompressOptions& options, Take take) {
  const int group = static_cast<int>(
      std::clamp<int64_t>(options.stats_budget_bytes / calibration.bytes_per_layer(), 1, layers));
  for (int first = 0; first < layers; first += group) {
    const int last = std::min(layers, first + group);
    report(options, "calibrating layers " + std::to_string(first) + ".." + std::to_string(last - 1) + " on " +
                        std::to_string(calibration.tokens()) + " tokens (" +
                        std::to_string(calibration.windows()) + " windows of " +
                        std::to_string(calibration.window()) + ")");
    std::vector<LayerGrams> grams = calibration.layer_grams(first, last);
    for (int l = first; l < last; ++l) {
      take(l, grams[l - first]);
      grams[l - first].clear();  // dropped once used
    }
  }
}

int thread_count(const CompressOptions& options) {
  return options.threads > 0 ? options.threads : omp_get_num_procs();
}

LayerWhitening whiten(const LayerGrams& grams, int threads) {
  LayerWhitening white(grams.size());
  parallel_jobs(static_cast<int>(grams.size()), threads, [&](int i) { white[i] = cholesky_whitening(grams[i]); });
  return white;
}

// Calls visit(layer, whitening) for every layer in order. Without calibration
// every whitening is the identity (plain SVD); with a statistics file the
// statistics are read from it, else gathered from passes over the text.
template <typename Visit>
void for_each_layer(const Model& dense, Calibration* calibration, GramStoreReader* store,
                    const CompressOptions& options, Visit visit) {
  const int layers = dense.config.n_layers;
  if (!calibration) {
    for (int l = 0; l < layers; ++l) {
      LayerWhitening white;
      for (int i = 0; i < 4; ++i) white.push_back(Whitening::identity(linear_input_dim(dense.config, LinearInput(i))));
      visit(l, white);
    }
  } else if (store) {
    for (int l = 0; l < layers; ++l) visit(l, whiten(store->layer(l), thread_count(options)));
  } else {
    gather_statistics(*calibration, layers, options, [&](int l, const LayerGrams& g) { visit(l, whiten(g, thread_count(options))); });
  }
}

// Opens options.stats_path, computing and writing the statistics first when it does not exist yet.
std::optional<GramStoreReader> open_statistics(const Model& dense, const std::vector<int32_t>& ids,
                                               Calibration& calibration, const CompressOptions& options) {
  if (options.stats_path.empty()) return std::nullopt;
  const GramStoreKey key = gram_store_key(dense, ids, calibration.window());
  if (std::filesystem::exists(options.stats_path)) {
    report(options, "calibration statistics from " + options.stats_path);
  } else {
    GramStoreWriter writer(options.stats_path, key);
    gather_statistics(calibration, dense.config.n_layers, options, [&](int, const LayerGrams& g) { writer.add(g); });
    writer.commit();
    report(options, "wrote calibration statistics to " + options.stats_path);
  }
  return std::optional<GramStoreReader>(std::in_place, options.stats_path, key);
}

void check_dense(const Model& dense) {
  dense.validate();
  for (size_t l = 0; l < dense.layers.size(); ++l)
    for (const MatrixKind& k : kKinds)
      check(!(dense.layers[l].*k.member).low_rank(), dense.source, "layer ", l, " ", k.name,
            " is already low-rank: compress takes a dense model");
}

// Ranks[kind][layer]; -1: the matrix stays dense.
using Ranks = std::vector<std::vector<int64_t>>;

// One compression run: the options, the calibration, the ranks and what the
// factoring records for the provenance.
class Compression {
 public:
  Compression(const Model& dense, const std::vector<int32_t>& ids, const CompressOptions& options)
      : dense_(dense),
        ids_(ids),
        options_(options),
        layers_(dense.config.n_layers),
        threads_(thread_count(options)) {
    int64_t matrices = 0;
    for (int k = 0; k < kKindCount; ++k) {
      const Linear& w = dense.layers[0].*kKinds[k].member;
      matrices += w.out() * w.in() * layers_;
    }
    const int64_t all = dense.unique_params();
    fixed_params_ = all - matrices;
    budget_ = static_cast<int64_t>(options.keep * static_cast<double>(all)) - fixed_params_;
    matrix_keep_ = static_cast<double>(budget_) / static_cast<double>(matrices);
    check(budget_ > 0, "compress", "--ratio ", options.keep, " keeps ", static_cast<int64_t>(options.keep * all),
          " parameters, no more than the ", fixed_params_, " that are never compressed (embeddings, norms, biases)");
    ranks_.assign(kKindCount, {});
    for (int k = 0; k < kKindCount; ++k) {
      const Linear& w = dense.layers[0].*kKinds[k].member;
      ranks_[k].assign(layers_, uniform_rank(w.out(), w.in(), matrix_keep_));
    }
    losses_.assign(kKindCount, std::vector<double>(layers_, 0.0));
    if (options.method == CompressMethod::Whiten) {
      check(!ids.empty(), "compress", "whitening needs calibration tokens");
      const ModelConfig& c = dense.config;
      const int window = options.window > 0 ? options.window : std::min(c.max_seq > 0 ? c.max_seq : 2048, 2048);
      calibration_.emplace(dense, ids, window, options.threads);
      store_ = open_statistics(dense, ids, *calibration_, options);
    }
  }

  Compressed run() {
    if (options_.allocation == RankAllocation::Loss) allocate_by_loss();
    if (options_.allocation == RankAllocation::Budget) allocate_by_budget();
    Compressed result;
    result.model = options_.sequential ? sequential_pass() : dense_statistics_pass(nullptr);
    result.model.pack();
    result.model.validate();
    result.provenance = provenance(result.model);
    return result;
  }

 private:
  Calibration* calibration() { return calibration_ ? &*calibration_ : nullptr; }
  GramStoreReader* store() { return store_ ? &*store_ : nullptr; }

  // Factors layer l's matrices of the kinds `which` selects into `to` (dense
  // where the rank is -1), each whitened by white[its input]; fitted to the
  // dense residual (fitted_weight) or else to the dense layer's outputs
  // (compensated_weight) when given those statistics.
  // Records each matrix's whitened singular values in `spectra` when given.
  template <typename Which>
  void factor(int l, Which which, const std::vector<const Whitening*>& white, Layer& to,
              const InputStatistics* refit, std::vector<std::vector<std::vector<double>>>* spectra) {
    std::vector<int> kinds;
    for (int k = 0; k < kKindCount; ++k)
      if (which(kKinds[k])) kinds.push_back(k);
    parallel_jobs(static_cast<int>(kinds.size()), threads_, [&](int i) {
      const int k = kinds[i];
      const Linear& w = dense_.layers[l].*kKinds[k].member;
      const Whitening& wh = *white[static_cast<int>(kKinds[k].input)];
      const Tensor target = refit && refit->residual ? fitted_weight(wh, *refit->residual)
                            : refit && refit->cross  ? compensated_weight(w.first, wh, *refit->cross)
                                                     : w.first;
      if (ranks_[k][l] < 0) {
        to.*kKinds[k].member = Linear{target, Tensor(), w.bias};
        return;
      }
      LowRank lr = whitened_low_rank(target, wh, ranks_[k][l]);
      losses_[k][l] = truncation_loss(lr.singular_values, ranks_[k][l]);
      to.*kKinds[k].member = Linear{lr.first, std::move(lr.second), w.bias};
      if (spectra) (*spectra)[k][l] = std::move(lr.singular_values);
    });
    for (int input = 0; input < 4; ++input)
      if (white[input] && white[input]->shift > 0)
        shifts_.push_back({{"layer", l}, {"input", kInputNames[input]}, {"shift", white[input]->shift}});
  }

  void report_layer(int l) {
    std::ostringstream line;
    line << "layer " << l + 1 << "/" << layers_ << ": ranks";
    for (int k = 0; k < kKindCount; ++k)
      line << " " << kKinds[k].name << " " << (ranks_[k][l] < 0 ? std::string("dense") : std::to_string(ranks_[k][l]));
    for (const auto& s : shifts_)
      if (s["layer"] == l) line << " (" << s["input"].get<std::string>() << " statistics shifted by " << s["shift"] << ")";
    report(options_, line.str());
  }

  // Every layer whitened with the dense model's statistics (SVD-LLM), or
  // plain SVD without calibration.
  Model dense_statistics_pass(std::vector<std::vector<std::vector<double>>>* spectra) {
    Model m;
    m.config = dense_.config;
    m.family = dense_.family;
    m.source = dense_.source;
    m.embed = dense_.embed;
    m.final_norm = dense_.final_norm;
    m.lm_head = dense_.lm_head;
    m.layers.resize(layers_);
    for_each_layer(dense_, calibration(), store(), options_, [&](int l, const LayerWhitening& white) {
      Layer& to = m.layers[l];
      to.attn_norm = dense_.layers[l].attn_norm;
      to.mlp_norm = dense_.layers[l].mlp_norm;
      factor(l, [](const MatrixKind&) { return true; }, {&white[0], &white[1], &white[2], &white[3]}, to, nullptr,
             spectra);
      report_layer(l);
    });
    return m;
  }

  // Layer by layer and input by input on the partly compressed model's rows (compress/sequential.h).
  Model sequential_pass() {
    SequentialCalibration seq(dense_, ids_, calibration_->window(), options_.threads,
                              {options_.refit, options_.refit_residual});
    report(options_, "sequential calibration on " + std::to_string(seq.tokens()) + " tokens (" +
                         std::to_string(seq.windows()) + " windows of " + std::to_string(seq.window()) + ")" +
                         (options_.refit ? ", each matrix fitted to the dense model's outputs" : "") +
                         (options_.refit_residual ? ", o and down to its residual stream" : ""));
    for (int l = 0; l < layers_; ++l) {
      for (int input = 0; input < 4; ++input) {
        const InputStatistics stats = seq.gather(LinearInput(input));
        const bool fitted = stats.cross || stats.residual;
        const Whitening white = cholesky_whitening(stats.compressed, fitted ? options_.ridge : 0.0);
        std::vector<const Whitening*> by_input(4, nullptr);
        by_input[input] = &white;
        factor(l, [&](const MatrixKind& k) { return static_cast<int>(k.input) == input; }, by_input,
               seq.work().layers[l], fitted ? &stats : nullptr, nullptr);
        seq.work().pack_layer(l);
      }
      seq.advance();
      report_layer(l);
    }
    return seq.work();
  }

  // Singular values only, to share each type's budget by loss.
  void allocate_by_loss() {
    std::vector<std::vector<std::vector<double>>> values(kKindCount, std::vector<std::vector<double>>(layers_));
    for_each_layer(dense_, calibration(), store(), options_, [&](int l, const LayerWhitening& white) {
      parallel_jobs(kKindCount, threads_, [&](int k) {
        values[k][l] = whitened_singular_values((dense_.layers[l].*kKinds[k].member).first,
                                                white[static_cast<int>(kKinds[k].input)]);
      });
    });
    for (int k = 0; k < kKindCount; ++k) {
      const Linear& w = dense_.layers[0].*kKinds[k].member;
      const int64_t max_rank = std::max<int64_t>(1, w.out() * w.in() / (w.out() + w.in()));
      ranks_[k] = loss_guided_ranks(values[k], ranks_[k][0] * layers_, max_rank);
    }
  }

  // Measures each matrix's sensitivity on the uniform compression with dense
  // statistics, then shares the whole budget by predicted loss (budgeted_ranks).
  void allocate_by_budget() {
    check(calibration_.has_value(), "compress", "budgeted allocation needs whitening (calibration data)");
    report(options_, "budget allocation: uniform compression with dense statistics, to measure sensitivities");
    std::vector<std::vector<std::vector<double>>> spectra(kKindCount, std::vector<std::vector<double>>(layers_));
    Model uniform = dense_statistics_pass(&spectra);
    uniform.pack();
    // dropped[k][l]: Σσ² beyond the uniform rank, the squared calibration output error.
    std::vector<std::vector<double>> dropped(kKindCount, std::vector<double>(layers_, 0.0));
    for (int k = 0; k < kKindCount; ++k)
      for (int l = 0; l < layers_; ++l)
        for (size_t j = ranks_[k][l]; j < spectra[k][l].size(); ++j) dropped[k][l] += spectra[k][l][j] * spectra[k][l][j];

    const int64_t probe = std::min<int64_t>({options_.probe_tokens, calibration_->window(),
                                             static_cast<int64_t>(ids_.size())});
    const KlProbe kl(dense_, std::vector<int32_t>(ids_.begin(), ids_.begin() + probe), options_.threads);
    const std::vector<std::vector<double>> sensitivity =
        measure_sensitivity(dense_, uniform, dropped, kl, options_.sensitivity, options_.progress, sensitivity_);

    std::vector<MatrixSpectrum> matrices;
    for (int k = 0; k < kKindCount; ++k)
      for (int l = 0; l < layers_; ++l) {
        const Linear& w = dense_.layers[l].*kKinds[k].member;
        // Sensitivities were probed at the uniform ranks: trusted only down to a fraction of them.
        const int64_t floor = static_cast<int64_t>(options_.min_rank_fraction * static_cast<double>(ranks_[k][l]));
        matrices.push_back({w.out(), w.in(), spectra[k][l], sensitivity[k][l], std::max<int64_t>(floor, 1)});
      }
    const std::vector<int64_t> ranks = budgeted_ranks(matrices, budget_);
    for (int k = 0; k < kKindCount; ++k)
      for (int l = 0; l < layers_; ++l) ranks_[k][l] = ranks[k * layers_ + l];
  }

  nlohmann::json provenance(const Model& m) const {
    nlohmann::json p;
    p["method"] = method_name(options_.method);
    p["keep_ratio"] = options_.keep;
    p["keep_ratio_of"] = "the whole model's parameters (embeddings, norms, biases count and stay dense)";
    p["matrix_keep"] = matrix_keep_;
    p["fixed_params"] = fixed_params_;
    p["allocation"] = allocation_name(options_.allocation);
    p["rank_rule"] = "uniform rank r = int(out*in*matrix_keep/(out+in)) per matrix type";
    if (options_.allocation == RankAllocation::Budget) {
      p["rank_rule"] = "budgeted: predicted loss = sensitivity x dropped whitened energy, greedy per parameter";
      p["sensitivity"] = sensitivity_;
      p["min_rank_fraction"] = options_.min_rank_fraction;
    }
    p["dense_model"] = {{"source", dense_.source}, {"family", dense_.family}};
    if (calibration_) {
      p["calibration"] = {{"tokens", calibration_->tokens()},
                          {"window", calibration_->window()},
                          {"windows", calibration_->windows()},
                          {"activations", options_.sequential ? "compressed model, layer by layer (sequential)"
                                                              : "dense model, every layer"}};
      if (store_) p["calibration"]["statistics_file"] = options_.stats_path;
      p["whitening_shifts"] = shifts_;
    }
    if (options_.refit || options_.refit_residual) {
      p["refit"] = {{"fit", "reduced-rank regression (matrices kept dense: least squares)"}, {"ridge", options_.ridge}};
      if (options_.refit) p["refit"]["target"] = "dense layer outputs on dense inputs";
      if (options_.refit_residual)
        p["refit"]["residual_target"] = "o and down: dense residual after the add - compressed residual before it";
    }
    for (int k = 0; k < kKindCount; ++k) {
      p["ranks"][kKinds[k].name] = ranks_[k];
      p["relative_loss"][kKinds[k].name] = losses_[k];
    }
    p["params"] = m.unique_params();
    p["dense_params"] = dense_.unique_params();
    return p;
  }

  const Model& dense_;
  const std::vector<int32_t>& ids_;
  const CompressOptions& options_;
  const int layers_;
  const int threads_;
  int64_t fixed_params_ = 0, budget_ = 0;
  double matrix_keep_ = 0;
  Ranks ranks_;
  std::vector<std::vector<double>> losses_;
  nlohmann::json shifts_ = nlohmann::json::array();
  nlohmann::json sensitivity_;
  std::optional<Calibration> calibration_;
  std::optional<GramStoreReader> store_;
};

}  // namespace

std::string method_name(CompressMethod method) { return method == CompressMethod::Whiten ? "whiten" : "svd"; }
std::string allocation_name(RankAllocation allocation) {
  switch (allocation) {
    case RankAllocation::Uniform: return "uniform";
    case RankAllocation::Loss: return "loss";
    case RankAllocation::Budget: return "budget";
  }
  return "";
}

Compressed compress_model(const Model& dense, const std::vector<int32_t>& calibration_ids,
                          const CompressOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_dense(dense);
  check(options.keep > 0 && options.keep < 1, "compress", "the kept parameter ratio must be in (0, 1), got ",
        options.keep);
  check(!options.sequential || options.method == CompressMethod::Whiten, "compress",
        "sequential calibration needs whitening");
  check(!options.refit || options.sequential, "compress",
        "the least-squares re-fit needs sequential calibration (on the dense model's own rows it changes nothing)");
  check(!options.refit_residual || options.sequential, "compress",
        "the residual re-fit needs sequential calibration (it is fitted to the compressed model's residual stream)");
  check(options.ridge >= 0, "compress", "ridge must be non-negative, got ", options.ridge);
  check(options.probe_tokens > 0, "compress", "probe tokens must be positive, got ", options.probe_tokens);
  check(options.min_rank_fraction >= 0 && options.min_rank_fraction <= 1, "compress",
        "the minimum rank fraction must be in [0, 1], got ", options.min_rank_fraction);
  // BLAS outside the executors (statistics, re-fit systems) gets the calibration forwards' threads.
  openblas_set_num_threads(thread_count(options));

  Compressed result = Compression(dense, calibration_ids, options).run();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.provenance["compress_seconds"] = secs;
  std::ostringstream done;
  done << "compressed " << dense.config.n_layers << " layers in " << secs << " s: " << result.model.unique_params()
       << " parameters (" << 100.0 * result.model.unique_params() / dense.unique_params() << "% of dense)";
  report(options, done.str());
  return result;
}

}  // namespace fsvd
