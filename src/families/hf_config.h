#pragma once
// Parser for the LLaMA-family fields of a Hugging Face config.json, shared by
// every family stored as a Hugging Face directory. It takes no stance on
// model_type / architectures: each family checks those itself.
#include <string>
#include <vector>

#include "model/config.h"

namespace fsvd {

struct HfConfig {
  ModelConfig model;  // validated
  std::string model_type;
  std::vector<std::string> architectures;  // may be empty
  bool attention_bias = false;             // LlamaConfig: biases on q, k, v and o
  bool mlp_bias = false;                   // LlamaConfig: biases on gate, up and down
};

// Throws Error(where, ...) naming the key for invalid JSON, missing required
// keys, wrong value types, unsupported settings and inconsistent numbers.
HfConfig parse_hf_config(const std::string& json_text, const std::string& where);

// A factorized LLaMA checkpoint's config.json: model_type must be "llama"
// (the families whose loaders know only that layout).
HfConfig parse_llama_config(const std::string& json_text, const std::string& where);
// The same, read from the file at `path`.
HfConfig read_llama_config(const std::string& path);

}  // namespace fsvd
