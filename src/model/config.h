#pragma once
// Architecture of a LLaMA-family decoder, whatever file it came from.
#include <cstdint>
#include <string>

namespace fsvd {

struct RopeScaling {
  std::string type = "none";  // "none" or "llama3"
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_max_position = 8192;
};

struct ModelConfig {
  int hidden = 0;
  int intermediate = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;  // from the file when given, else hidden / n_heads
  int vocab = 0;
  int max_seq = 0;   // trained context length
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  float rms_eps = 1e-5f;
  bool tied_embeddings = false;

  // Widths of the attention projections' outputs: q (and o's input), k and v.
  int64_t q_dim() const { return int64_t{n_heads} * head_dim; }
  int64_t kv_dim() const { return int64_t{n_kv_heads} * head_dim; }

  // Throws Error(where, ...) if the numbers are inconsistent or out of range.
  void validate(const std::string& where) const;
};

// RoPE inverse frequencies for the pairs (i, i + head_dim/2), with llama3 scaling applied.
void rope_inv_freq(const ModelConfig& c, float* out /* head_dim / 2 */);

}  // namespace fsvd
