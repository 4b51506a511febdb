#include "compress/sensitivity.h"

#include <algorithm>

#include "compress/matrix_kinds.h"

namespace fsvd {
namespace {

double per_unit(double kl, double energy) { return energy > 0 ? std::max(kl, 0.0) / energy : 0.0; }

}  // namespace

std::string sensitivity_probes_name(SensitivityProbes mode) {
  return mode == SensitivityProbes::PerMatrix ? "matrix" : "type-layer";
}

std::vector<std::vector<double>> measure_sensitivity(const Model& dense, const Model& uniform,
                                                     const std::vector<std::vector<double>>& dropped,
                                                     const KlProbe& probe, SensitivityProbes mode,
                                                     const std::function<void(const std::string&)>& progress,
                                                     nlohmann::json& record) {
  const int layers = dense.config.n_layers;
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  // The dense model with matrices of `uniform` put in; layers before `first` stay dense.
  auto kl_with = [&](int first, auto put) {
    Model m = dense;
    put(m);
    return probe.kl(m, first);
  };
  std::vector<std::vector<double>> s(kKindCount, std::vector<double>(layers, 0.0));
  record = {{"probes", sensitivity_probes_name(mode)}, {"probe_tokens", probe.tokens()}};

  if (mode == SensitivityProbes::PerMatrix) {
    for (int l = 0; l < layers; ++l)
      for (int k = 0; k < kKindCount; ++k) {
        const double d = kl_with(l, [&](Model& m) {
          m.layers[l].*kKinds[k].member = uniform.layers[l].*kKinds[k].member;
          m.pack_layer(l);
        });
        s[k][l] = per_unit(d, dropped[k][l]);
        say(std::string("sensitivity probe layer ") + std::to_string(l + 1) + " " + kKinds[k].name + ": KL " +
            std::to_string(d));
      }
    for (int k = 0; k < kKindCount; ++k) record["per_matrix"][kKinds[k].name] = s[k];
    return s;
  }

  std::vector<double> per_type(kKindCount), per_layer(layers);
  for (int k = 0; k < kKindCount; ++k) {
    const double d = kl_with(0, [&](Model& m) {
      for (int l = 0; l < layers; ++l) {
        m.layers[l].*kKinds[k].member = uniform.layers[l].*kKinds[k].member;
        m.pack_layer(l);
      }
    });
    double energy = 0;
    for (int l = 0; l < layers; ++l) energy += dropped[k][l];
    per_type[k] = per_unit(d, energy);
    say(std::string("sensitivity probe ") + kKinds[k].name + ": KL " + std::to_string(d));
  }
  for (int l = 0; l < layers; ++l) {
    const double d = kl_with(l, [&](Model& m) { m.layers[l] = uniform.layers[l]; });
    double predicted = 0;
    for (int k = 0; k < kKindCount; ++k) predicted += per_type[k] * dropped[k][l];
    per_layer[l] = per_unit(d, predicted);
    say("sensitivity probe layer " + std::to_string(l + 1) + ": KL " + std::to_string(d));
  }
  for (int k = 0; k < kKindCount; ++k) {
    record["per_type"][kKinds[k].name] = per_type[k];
    for (int l = 0; l < layers; ++l) s[k][l] = per_type[k] * per_layer[l];
  }
  record["layer_factor"] = per_layer;
  return s;
}

}  // namespace fsvd
