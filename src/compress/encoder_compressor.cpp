#include "compress/encoder_compressor.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>

#include "compress/encoder_calibration.h"
#include "compress/rank_allocation.h"
#include "compress/whitening.h"
#include "core/error.h"

namespace fsvd {
namespace {

struct MatrixKind {
  const char* name;  // as `flashsvd info` names an encoder's linears
  Linear EncoderLayer::*member;
  LinearInput input;
};
constexpr MatrixKind kKinds[] = {{"q", &EncoderLayer::q, LinearInput::Qkv},  {"k", &EncoderLayer::k, LinearInput::Qkv},
                                 {"v", &EncoderLayer::v, LinearInput::Qkv},  {"o", &EncoderLayer::o, LinearInput::O},
                                 {"up", &EncoderLayer::up, LinearInput::GateUp},
                                 {"down", &EncoderLayer::down, LinearInput::Down}};
constexpr int kKindCount = std::size(kKinds);
constexpr const char* kInputNames[] = {"qkv", "o", "up", "down"};  // by LinearInput

void report(const EncoderCompressOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

// Parameters of one layer: linears with their biases, and LayerNorms.
int64_t layer_params(const EncoderLayer& l) {
  int64_t n = 0;
  for (const MatrixKind& k : kKinds) n += (l.*k.member).params();
  for (const Tensor* t : {&l.attn_norm.weight, &l.attn_norm.bias, &l.mlp_norm.weight, &l.mlp_norm.bias})
    n += t->numel();
  return n;
}

int64_t layers_params(const EncoderModel& m) {
  int64_t n = 0;
  for (const EncoderLayer& l : m.layers) n += layer_params(l);
  return n;
}

void check_dense(const EncoderModel& dense) {
  dense.validate();
  for (size_t l = 0; l < dense.layers.size(); ++l)
    for (const MatrixKind& k : kKinds)
      check(!(dense.layers[l].*k.member).low_rank(), dense.source, "layer ", l, " ", k.name,
            " is already low-rank: compress takes a dense encoder");
}

class EncoderCompression {
 public:
  EncoderCompression(const EncoderModel& dense, std::vector<EncoderInput> calibration,
                     const EncoderCompressOptions& options)
      : dense_(dense), options_(options), layers_(dense.config.n_layers) {
    int64_t matrices = 0;
    for (const EncoderLayer& l : dense.layers)
      for (const MatrixKind& k : kKinds) matrices += (l.*k.member).out() * (l.*k.member).in();
    dense_layer_params_ = layers_params(dense);
    const int64_t fixed = dense_layer_params_ - matrices;
    const double budget = options.keep * static_cast<double>(dense_layer_params_) - static_cast<double>(fixed);
    check(budget > 0, "compress", "--ratio ", options.keep, " keeps less of the layers than their ", fixed,
          " bias and LayerNorm parameters");
    matrix_keep_ = budget / static_cast<double>(matrices);
    for (const MatrixKind& k : kKinds) {
      const Linear& w = dense.layers[0].*k.member;
      ranks_.push_back(uniform_rank(w.out(), w.in(), matrix_keep_));
    }
    losses_.assign(kKindCount, std::vector<double>(layers_, 0.0));
    if (options.method == CompressMethod::Whiten) {
      check(!calibration.empty(), "compress", "whitening needs calibration sentences");
      calibration_.emplace(dense, std::move(calibration), options.batch_tokens, options.threads);
    }
  }

  CompressedEncoder run() {
    CompressedEncoder result;
    EncoderModel& m = result.model;
    m = dense_;  // embeddings, norms, heads and settings shared with the dense encoder
    if (calibration_) {
      const int group = static_cast<int>(
          std::clamp<int64_t>(options_.stats_budget_bytes / calibration_->bytes_per_layer(), 1, layers_));
      for (int first = 0; first < layers_; first += group) {
        const int last = std::min(layers_, first + group);
        report(options_, "calibrating layers " + std::to_string(first) + ".." + std::to_string(last - 1) + " on " +
                             std::to_string(calibration_->tokens()) + " tokens (" +
                             std::to_string(calibration_->inputs()) + " sentences, " +
                             std::to_string(calibration_->batches()) + " batches)");
        std::vector<LayerGrams> grams = calibration_->layer_grams(first, last);
        for (int l = first; l < last; ++l) {
          std::vector<Whitening> white;
          for (const Gram& g : grams[l - first]) white.push_back(cholesky_whitening(g));
          grams[l - first].clear();  // dropped once used
          factor_layer(l, white, m.layers[l]);
        }
      }
    } else {
      for (int l = 0; l < layers_; ++l) {
        std::vector<Whitening> white;
        for (int i = 0; i < 4; ++i)
          white.push_back(Whitening::identity(encoder_input_dim(dense_.config, LinearInput(i))));
        factor_layer(l, white, m.layers[l]);
      }
    }
    for (EncoderLayer& l : m.layers) l.qkv = {};
    m.pack();
    m.validate();
    result.provenance = provenance(m);
    return result;
  }

 private:
  void factor_layer(int l, const std::vector<Whitening>& white, EncoderLayer& to) {
    std::ostringstream line;
    line << "layer " << l + 1 << "/" << layers_ << ": ranks";
    for (int k = 0; k < kKindCount; ++k) {
      const Linear& w = dense_.layers[l].*kKinds[k].member;
      LowRank lr = whitened_low_rank(w.first, white[static_cast<int>(kKinds[k].input)], ranks_[k]);
      losses_[k][l] = truncation_loss(lr.singular_values, ranks_[k]);
      to.*kKinds[k].member = Linear{std::move(lr.first), std::move(lr.second), w.bias};
      line << " " << kKinds[k].name << " " << ranks_[k];
    }
    for (int i = 0; i < 4; ++i)
      if (white[i].shift > 0) {
        shifts_.push_back({{"layer", l}, {"input", kInputNames[i]}, {"shift", white[i].shift}});
        line << " (" << kInputNames[i] << " statistics shifted by " << white[i].shift << ")";
      }
    report(options_, line.str());
  }

  nlohmann::json provenance(const EncoderModel& m) const {
    nlohmann::json p;
    p["method"] = method_name(options_.method);
    p["keep_ratio"] = options_.keep;
    p["keep_ratio_of"] =
        "the transformer layers' parameters (matrices, biases, LayerNorms; biases and LayerNorms stay whole); "
        "embeddings and heads are not counted";
    p["matrix_keep"] = matrix_keep_;
    p["rank_rule"] = "uniform rank r = int(out*in*matrix_keep/(out+in)) per matrix type";
    p["dense_model"] = {{"source", dense_.source}, {"family", dense_.family}};
    if (calibration_) {
      p["calibration"] = {{"inputs", calibration_->inputs()},
                          {"tokens", calibration_->tokens()},
                          {"activations", "dense encoder, every layer"}};
      p["whitening_shifts"] = shifts_;
    }
    for (int k = 0; k < kKindCount; ++k) {
      p["ranks"][kKinds[k].name] = ranks_[k];
      p["relative_loss"][kKinds[k].name] = losses_[k];
    }
    p["layer_params"] = layers_params(m);
    p["dense_layer_params"] = dense_layer_params_;
    p["params"] = m.unique_params();
    p["dense_params"] = dense_.unique_params();
    return p;
  }

  const EncoderModel& dense_;
  const EncoderCompressOptions& options_;
  const int layers_;
  int64_t dense_layer_params_ = 0;
  double matrix_keep_ = 0;
  std::vector<int64_t> ranks_;  // by kind
  std::vector<std::vector<double>> losses_;
  nlohmann::json shifts_ = nlohmann::json::array();
  std::optional<EncoderCalibration> calibration_;
};

}  // namespace

CompressedEncoder compress_encoder(const EncoderModel& dense, std::vector<EncoderInput> calibration,
                                   const EncoderCompressOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_dense(dense);
  check(options.keep > 0 && options.keep < 1, "compress", "the kept parameter ratio must be in (0, 1), got ",
        options.keep);
  // The SVDs run in OpenBLAS's LAPACK: give it the same threads as the calibration forwards.
  openblas_set_num_threads(options.threads > 0 ? options.threads : omp_get_num_procs());
  CompressedEncoder result = EncoderCompression(dense, std::move(calibration), options).run();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.provenance["compress_seconds"] = secs;
  std::ostringstream done;
  done << "compressed " << dense.config.n_layers << " layers in " << secs << " s: "
       << result.provenance["layer_params"].get<int64_t>() << " layer parameters ("
       << 100.0 * result.provenance["layer_params"].get<double>() / static_cast<double>(layers_params(dense))
       << "% of dense), " << result.model.unique_params() << " in all";
  report(options, done.str());
  return result;
}

}  // namespace fsvd
