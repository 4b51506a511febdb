#pragma once
// How much a matrix's truncation error costs at the logits: KL (KlProbe) per
// unit of its dropped whitened energy (Σσ² beyond its rank, the squared
// output error on the calibration rows), measured by putting matrices of a
// uniform compression into the dense model.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compress/kl_probe.h"
#include "model/model.h"

namespace fsvd {

enum class SensitivityProbes {
  // One probe per matrix (kinds × layers): s = KL / dropped.
  PerMatrix,
  // One probe per kind (in every layer) and one per layer (every kind):
  // s = a_kind · b_layer with a_kind = KL / Σ_layers dropped and
  // b_layer = KL / Σ_kinds a_kind · dropped. Fewer probes, a separable guess.
  TypeAndLayer,
};

// s[kind][layer] >= 0 for the kinds of compress/matrix_kinds.h. `uniform`
// (packed) holds every matrix truncated, `dropped[kind][layer]` its dropped
// energy. `progress` gets a line per probe; `record` what was measured.
std::vector<std::vector<double>> measure_sensitivity(const Model& dense, const Model& uniform,
                                                     const std::vector<std::vector<double>>& dropped,
                                                     const KlProbe& probe, SensitivityProbes mode,
                                                     const std::function<void(const std::string&)>& progress,
                                                     nlohmann::json& record);

std::string sensitivity_probes_name(SensitivityProbes mode);

}  // namespace fsvd
