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
#include "compress/rank_allocation.h"
#include "compress/refit.h"
#include "compress/sequential.h"
#include "compress/whitening.h"
#include "core/error.h"

namespace fsvd {
namespace {

struct MatrixKind {
  const char* name;
  Linear Layer::*member;
  LinearInput input;
};
constexpr MatrixKind kKinds[] = {
    {"q", &Layer::q, LinearInput::Qkv},          {"k", &Layer::k, LinearInput::Qkv},
    {"v", &Layer::v, LinearInput::Qkv},          {"o", &Layer::o, LinearInput::O},
    {"gate", &Layer::gate, LinearInput::GateUp}, {"up", &Layer::up, LinearInput::GateUp},
    {"down", &Layer::down, LinearInput::Down}};
constexpr int kKindCount = std::size(kKinds);
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

LayerWhitening whiten(const LayerGrams& grams) {
  LayerWhitening white;
  for (const Gram& g : grams) white.push_back(cholesky_whitening(g));
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
    for (int l = 0; l < layers; ++l) visit(l, whiten(store->layer(l)));
  } else {
    gather_statistics(*calibration, layers, options, [&](int l, const LayerGrams& g) { visit(l, whiten(g)); });
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
      : dense_(dense), ids_(ids), options_(options), layers_(dense.config.n_layers) {
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

  // Factors layer l's matrices that read `input` into `to` (dense where the
  // rank is -1); re-fits their second factors when given statistics. Records
  // each matrix's whitened singular values in `spectra` when given.
  void factor(int l, int input, const Whitening& white, Layer& to, const InputStatistics* refit,
              std::vector<std::vector<std::vector<double>>>* spectra) {
    for (int k = 0; k < kKindCount; ++k) {
      if (static_cast<int>(kKinds[k].input) != input) continue;
      const Linear& w = dense_.layers[l].*kKinds[k].member;
      if (ranks_[k][l] < 0) {
        to.*kKinds[k].member = w;
        continue;
      }
      LowRank lr = whitened_low_rank(w.first, white, ranks_[k][l]);
      losses_[k][l] = truncation_loss(lr.singular_values, ranks_[k][l]);
      Tensor second = refit ? refit_second(w.first, lr.first, refit->compressed, *refit->cross, options_.ridge)
                            : std::move(lr.second);
      to.*kKinds[k].member = Linear{lr.first, std::move(second), w.bias};
      if (spectra) (*spectra)[k][l] = std::move(lr.singular_values);
    }
    if (white.shift > 0) shifts_.push_back({{"layer", l}, {"input", kInputNames[input]}, {"shift", white.shift}});
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
      for (int input = 0; input < 4; ++input) factor(l, input, white[input], to, nullptr, spectra);
      report_layer(l);
    });
    return m;
  }

  // Layer by layer and input by input on the partly compressed model's rows (compress/sequential.h).
  Model sequential_pass() {
    SequentialCalibration seq(dense_, ids_, calibration_->window(), options_.threads, options_.refit);
    report(options_, "sequential calibration on " + std::to_string(seq.tokens()) + " tokens (" +
                         std::to_string(seq.windows()) + " windows of " + std::to_string(seq.window()) + ")" +
                         (options_.refit ? ", least-squares re-fit against the dense model" : ""));
    for (int l = 0; l < layers_; ++l) {
      for (int input = 0; input < 4; ++input) {
        const InputStatistics stats = seq.gather(LinearInput(input));
        factor(l, input, cholesky_whitening(stats.compressed), seq.work().layers[l],
               options_.refit ? &stats : nullptr, nullptr);
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
      for (int k = 0; k < kKindCount; ++k)
        values[k][l] = whitened_singular_values((dense_.layers[l].*kKinds[k].member).first,
                                                white[static_cast<int>(kKinds[k].input)]);
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

    // Probes: KL of the dense model with one type (every layer), then one layer (every type), taken from `uniform`.
    const int64_t probe = std::min<int64_t>({options_.probe_tokens, calibration_->window(),
                                             static_cast<int64_t>(ids_.size())});
    const KlProbe kl(dense_, std::vector<int32_t>(ids_.begin(), ids_.begin() + probe), options_.threads);
    auto probe_kl = [&](auto swap) {
      Model m = dense_;
      swap(m);
      m.pack();
      return kl.kl(m);
    };
    std::vector<double> per_type(kKindCount), per_layer(layers_);
    for (int k = 0; k < kKindCount; ++k) {
      const double d = probe_kl([&](Model& m) {
        for (int l = 0; l < layers_; ++l) m.layers[l].*kKinds[k].member = uniform.layers[l].*kKinds[k].member;
      });
      double energy = 0;
      for (int l = 0; l < layers_; ++l) energy += dropped[k][l];
      per_type[k] = energy > 0 ? std::max(d, 0.0) / energy : 0.0;
      report(options_, std::string("sensitivity probe ") + kKinds[k].name + ": KL " + std::to_string(d));
    }
    for (int l = 0; l < layers_; ++l) {
      const double d = probe_kl([&](Model& m) { m.layers[l] = uniform.layers[l]; });
      double predicted = 0;
      for (int k = 0; k < kKindCount; ++k) predicted += per_type[k] * dropped[k][l];
      per_layer[l] = predicted > 0 ? std::max(d, 0.0) / predicted : 0.0;
      report(options_, "sensitivity probe layer " + std::to_string(l + 1) + ": KL " + std::to_string(d));
    }

    std::vector<MatrixSpectrum> matrices;
    for (int k = 0; k < kKindCount; ++k)
      for (int l = 0; l < layers_; ++l) {
        const Linear& w = dense_.layers[l].*kKinds[k].member;
        matrices.push_back({w.out(), w.in(), spectra[k][l], per_type[k] * per_layer[l]});
      }
    const std::vector<int64_t> ranks = budgeted_ranks(matrices, budget_);
    for (int k = 0; k < kKindCount; ++k)
      for (int l = 0; l < layers_; ++l) ranks_[k][l] = ranks[k * layers_ + l];
    // per type: probe KL per unit of dropped whitened energy; per layer: a factor on it.
    sensitivity_ = {{"probe_tokens", probe}, {"per_type", nlohmann::json::object()}, {"layer_factor", per_layer}};
    for (int k = 0; k < kKindCount; ++k) sensitivity_["per_type"][kKinds[k].name] = per_type[k];
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
    if (options_.refit) p["refit"] = {{"target", "dense layer outputs on dense inputs"}, {"ridge", options_.ridge}};
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
  check(options.ridge >= 0, "compress", "ridge must be non-negative, got ", options.ridge);
  check(options.probe_tokens > 0, "compress", "probe tokens must be positive, got ", options.probe_tokens);
  // The SVDs run in OpenBLAS's LAPACK: give it the same threads as the calibration forwards.
  openblas_set_num_threads(options.threads > 0 ? options.threads : omp_get_num_procs());

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
