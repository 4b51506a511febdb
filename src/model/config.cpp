#include "model/config.h"

#include <cmath>

#include "core/error.h"

namespace fsvd {

void ModelConfig::validate(const std::string& where) const {
  check(hidden > 0 && intermediate > 0 && n_layers > 0 && n_heads > 0 && n_kv_heads > 0 &&
            head_dim > 0 && vocab > 0,
        where, "config has a non-positive dimension (hidden ", hidden, ", intermediate ",
        intermediate, ", layers ", n_layers, ", heads ", n_heads, ", kv heads ", n_kv_heads,
        ", head_dim ", head_dim, ", vocab ", vocab, ")");
  check(n_heads % n_kv_heads == 0, where, "heads ", n_heads, " not a multiple of kv heads ",
        n_kv_heads);
  check(head_dim % 2 == 0, where, "head_dim ", head_dim, " must be even for RoPE");
  check(hidden <= (1 << 20) && intermediate <= (1 << 22) && n_layers <= 4096 && vocab <= (1 << 24) &&
            n_heads <= 4096 && head_dim <= 4096,
        where, "config dimensions are implausibly large");
  check(rope_theta > 0 && std::isfinite(rope_theta), where, "rope_theta must be positive");
  check(rms_eps > 0 && std::isfinite(rms_eps), where, "rms_norm_eps must be positive");
  check(rope_scaling.type == "none" || rope_scaling.type == "llama3", where,
        "unsupported rope_scaling type '", rope_scaling.type, "'");
  if (rope_scaling.type == "llama3")
    check(rope_scaling.factor > 0 && rope_scaling.high_freq_factor > rope_scaling.low_freq_factor &&
              rope_scaling.low_freq_factor > 0 && rope_scaling.original_max_position > 0,
          where, "llama3 rope_scaling needs factor > 0, high_freq_factor > low_freq_factor > 0 and ",
          "original_max_position_embeddings > 0");
  check(max_seq >= 0, where, "negative context length ", max_seq);
}

void rope_inv_freq(const ModelConfig& c, float* out) {
  const int half = c.head_dim / 2;
  const RopeScaling& s = c.rope_scaling;
  for (int i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(static_cast<double>(c.rope_theta), 2.0 * i / c.head_dim);
    if (s.type == "llama3") {
      // Meta's Llama 3.1 rule: long wavelengths divided by factor, short kept, smooth between.
      const double pi = 3.14159265358979323846;
      const double low_wavelen = s.original_max_position / s.low_freq_factor;
      const double high_wavelen = s.original_max_position / s.high_freq_factor;
      const double wavelen = 2 * pi / f;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (s.original_max_position / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    out[i] = static_cast<float>(f);
  }
}

}  // namespace fsvd
