#pragma once
// Flags shared by every command that loads a model.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace fsvd {

struct ModelFlags {
  std::string model;      // empty: the default model
  std::string family;     // empty: detect
  std::string tokenizer;  // empty: from the model
  std::string device = "auto";
  int threads = 0;  // CPU threads, 0: all
  std::string graph = "model";     // GPU decode: none | layer | model
  std::string precision = "bf16";  // GPU weights: bf16 | fp32
  std::string pdl = "on";          // GPU: programmatic dependent launch between GEMVs
};

// `runs_model` adds the flags of commands that execute it (--tokenizer,
// --device, --threads, --graph, --precision).
std::shared_ptr<ModelFlags> add_model_flags(CLI::App& cmd, bool runs_model);
// The model path, fetching the default model when none was given.
std::string resolve_model_path(const ModelFlags& flags);

}  // namespace fsvd
