#include "families/pickled_rope.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace fsvd {

namespace {

// The buffers are fp32 (torch's pow and division each round once), the
// comparisons double: a few ulp apart, far below a different base.
bool close(double got, double want) { return std::abs(got - want) <= 1e-5 * std::abs(want); }

}  // namespace

std::map<std::string, Tensor> saved_inv_freqs(const TorchArchive& archive) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, info] : archive.named_tensors())
    if (name.ends_with("rotary_emb.inv_freq")) out.emplace(name, archive.load_f32(name));
  return out;
}

ModelConfig rope_from_inv_freq(const std::map<std::string, Tensor>& inv_freqs, ModelConfig config,
                               const std::string& where) {
  if (inv_freqs.empty()) return config;
  const int64_t half = config.head_dim / 2;
  const auto& [name, first] = *inv_freqs.begin();
  for (const auto& [other, t] : inv_freqs) {
    check(t.shape() == std::vector<int64_t>{half}, where, "RoPE buffer ", other, " has shape ", t.shape_str(),
          " but head_dim ", config.head_dim, " implies [", half, "]");
    for (int64_t i = 0; i < half; ++i) {
      check(std::isfinite(t.data()[i]) && t.data()[i] > 0, where, "RoPE buffer ", other, " entry ", i, " is ",
            t.data()[i], ", not a positive frequency");
      check(close(t.data()[i], first.data()[i]), where, "RoPE buffers ", name, " and ", other, " disagree at entry ", i,
            " (", first.data()[i], " vs ", t.data()[i], "): layers rotating differently are not supported");
    }
  }
  const float* inv = first.data();

  std::vector<float> from_config(static_cast<size_t>(half));
  rope_inv_freq(config, from_config.data());
  bool matches = true;
  for (int64_t i = 0; i < half; ++i) matches = matches && close(inv[i], from_config[i]);
  if (matches) return config;

  // inv[i] = base^(-2i / head_dim): the last entry fixes the base most precisely.
  const double base =
      half < 2 ? config.rope_theta : std::pow(inv[half - 1], -config.head_dim / (2.0 * static_cast<double>(half - 1)));
  for (int64_t i = 0; i < half; ++i) {
    const double want = std::pow(base, -2.0 * static_cast<double>(i) / config.head_dim);
    check(close(inv[i], want), where, "RoPE buffer ", name, " is not 1 / base^(2i / ", config.head_dim,
          ") for any base: entry ", i, " is ", inv[i], " where base ", base, " gives ", want);
  }
  std::ostringstream note;
  note << "note: " << where << ": the model's saved RoPE buffers (" << name << ") rotate with base " << base
       << ", not the config's rope_theta " << config.rope_theta
       << (config.rope_scaling.type == "none" ? "" : " and its " + config.rope_scaling.type + " rope_scaling")
       << "; using what the checkpoint computes";
  log_info(note.str());
  config.rope_theta = static_cast<float>(base);
  config.rope_scaling = RopeScaling{};
  return config;
}

}  // namespace fsvd
