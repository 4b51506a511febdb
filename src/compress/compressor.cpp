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

// sqrt(dropped σ² / all σ²): the truncation's relative loss on the calibration data.
double relative_loss(const std::vector<double>& s, int64_t rank) {
  double kept = 0, all = 0;
  for (size_t i = 0; i < s.size(); ++i) (static_cast<int64_t>(i) < rank ? kept : all) += s[i] * s[i];
  all += kept;
  return all > 0 ? std::sqrt((all - kept) / all) : 0.0;
}

}  // namespace

std::string method_name(CompressMethod method) { return method == CompressMethod::Whiten ? "whiten" : "svd"; }
std::string allocation_name(RankAllocation allocation) {
  return allocation == RankAllocation::Uniform ? "uniform" : "loss";
}

Compressed compress_model(const Model& dense, const std::vector<int32_t>& calibration_ids,
                          const CompressOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_dense(dense);
  // The SVDs run in OpenBLAS's LAPACK: give it the same threads as the calibration forwards.
  openblas_set_num_threads(options.threads > 0 ? options.threads : omp_get_num_procs());
  const ModelConfig& c = dense.config;
  const int layers = c.n_layers;
  const Layer& shape = dense.layers.at(0);

  // ranks[kind][layer], uniform to start with.
  std::vector<std::vector<int64_t>> ranks(kKindCount);
  for (int k = 0; k < kKindCount; ++k) {
    const Linear& w = shape.*kKinds[k].member;
    ranks[k].assign(layers, uniform_rank(w.out(), w.in(), options.keep));
  }

  check(!options.sequential || options.method == CompressMethod::Whiten, "compress",
        "sequential calibration needs whitening");
  check(!options.refit || options.sequential, "compress",
        "the least-squares re-fit needs sequential calibration (on the dense model's own rows it changes nothing)");
  check(options.ridge >= 0, "compress", "ridge must be non-negative, got ", options.ridge);
  std::optional<Calibration> calibration;
  if (options.method == CompressMethod::Whiten) {
    check(!calibration_ids.empty(), "compress", "whitening needs calibration tokens");
    const int window = options.window > 0 ? options.window : std::min(c.max_seq > 0 ? c.max_seq : 2048, 2048);
    calibration.emplace(dense, calibration_ids, window, options.threads);
  }
  Calibration* cal = calibration ? &*calibration : nullptr;
  std::optional<GramStoreReader> store;
  if (cal) store = open_statistics(dense, calibration_ids, *cal, options);
  GramStoreReader* stats = store ? &*store : nullptr;

  if (options.allocation == RankAllocation::Loss) {
    // First pass: singular values only, to share each type's budget by loss.
    std::vector<std::vector<std::vector<double>>> values(kKindCount, std::vector<std::vector<double>>(layers));
    for_each_layer(dense, cal, stats, options, [&](int l, const LayerWhitening& white) {
      for (int k = 0; k < kKindCount; ++k)
        values[k][l] = whitened_singular_values((dense.layers[l].*kKinds[k].member).first,
                                                white[static_cast<int>(kKinds[k].input)]);
    });
    for (int k = 0; k < kKindCount; ++k) {
      const Linear& w = shape.*kKinds[k].member;
      const int64_t max_rank = std::max<int64_t>(1, w.out() * w.in() / (w.out() + w.in()));
      ranks[k] = loss_guided_ranks(values[k], ranks[k][0] * layers, max_rank);
    }
  }

  Compressed result;
  Model& m = result.model;
  std::vector<std::vector<double>> losses(kKindCount, std::vector<double>(layers));
  nlohmann::json shifts = nlohmann::json::array();
  // Factors layer l's matrices that read `input` into `to`; re-fits their second factors when given statistics.
  auto factor = [&](int l, int input, const Whitening& white, Layer& to, const InputStatistics* refit) {
    for (int k = 0; k < kKindCount; ++k) {
      if (static_cast<int>(kKinds[k].input) != input) continue;
      const Linear& w = dense.layers[l].*kKinds[k].member;
      LowRank lr = whitened_low_rank(w.first, white, ranks[k][l]);
      losses[k][l] = relative_loss(lr.singular_values, ranks[k][l]);
      Tensor second = refit ? refit_second(w.first, lr.first, refit->compressed, *refit->cross, options.ridge)
                            : std::move(lr.second);
      to.*kKinds[k].member = Linear{lr.first, std::move(second), w.bias};
    }
    if (white.shift > 0) shifts.push_back({{"layer", l}, {"input", kInputNames[input]}, {"shift", white.shift}});
  };
  auto report_layer = [&](int l) {
    std::ostringstream line;
    line << "layer " << l + 1 << "/" << layers << ": ranks";
    for (int k = 0; k < kKindCount; ++k) line << " " << kKinds[k].name << " " << ranks[k][l];
    for (const auto& s : shifts)
      if (s["layer"] == l) line << " (" << s["input"].get<std::string>() << " statistics shifted by " << s["shift"] << ")";
    report(options, line.str());
  };
  if (options.sequential) {
    SequentialCalibration seq(dense, calibration_ids, cal->window(), options.threads, options.refit);
    report(options, "sequential calibration on " + std::to_string(seq.tokens()) + " tokens (" +
                        std::to_string(seq.windows()) + " windows of " + std::to_string(seq.window()) + ")" +
                        (options.refit ? ", least-squares re-fit against the dense model" : ""));
    for (int l = 0; l < layers; ++l) {
      for (int input = 0; input < 4; ++input) {
        const InputStatistics stats = seq.gather(LinearInput(input));
        factor(l, input, cholesky_whitening(stats.compressed), seq.work().layers[l], options.refit ? &stats : nullptr);
        seq.work().pack_layer(l);
      }
      seq.advance();
      report_layer(l);
    }
    m = seq.work();
  } else {
    m.config = c;
    m.family = dense.family;
    m.source = dense.source;
    m.embed = dense.embed;
    m.final_norm = dense.final_norm;
    m.lm_head = dense.lm_head;
    m.layers.resize(layers);
    for_each_layer(dense, cal, stats, options, [&](int l, const LayerWhitening& white) {
      Layer& to = m.layers[l];
      to.attn_norm = dense.layers[l].attn_norm;
      to.mlp_norm = dense.layers[l].mlp_norm;
      for (int input = 0; input < 4; ++input) factor(l, input, white[input], to, nullptr);
      report_layer(l);
    });
  }
  m.pack();
  m.validate();

  nlohmann::json& p = result.provenance;
  p["method"] = method_name(options.method);
  p["keep_ratio"] = options.keep;
  p["allocation"] = allocation_name(options.allocation);
  p["rank_rule"] = "uniform rank r = int(out*in*keep/(out+in)) per matrix type";
  p["dense_model"] = {{"source", dense.source}, {"family", dense.family}};
  if (cal) {
    p["calibration"] = {{"tokens", cal->tokens()},
                        {"window", cal->window()},
                        {"windows", cal->windows()},
                        {"activations", options.sequential ? "compressed model, layer by layer (sequential)"
                                                           : "dense model, every layer"}};
    if (options.refit) p["refit"] = {{"target", "dense layer outputs on dense inputs"}, {"ridge", options.ridge}};
    if (stats) p["calibration"]["statistics_file"] = options.stats_path;
    p["whitening_shifts"] = shifts;
  }
  for (int k = 0; k < kKindCount; ++k) {
    p["ranks"][kKinds[k].name] = ranks[k];
    p["relative_loss"][kKinds[k].name] = losses[k];
  }
  p["params"] = m.unique_params();
  p["dense_params"] = dense.unique_params();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream done;
  done << "compressed " << layers << " layers in " << secs << " s: " << m.unique_params() << " parameters ("
       << 100.0 * m.unique_params() / dense.unique_params() << "% of dense)";
  report(options, done.str());
  return result;
}

}  // namespace fsvd
