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
};

std::shared_ptr<ModelFlags> add_model_flags(CLI::App& cmd);
// The model path, fetching the default model when none was given.
std::string resolve_model_path(const ModelFlags& flags);

}  // namespace fsvd
