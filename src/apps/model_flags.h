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
  std::string pack = "on";         // GPU: packed q|k|v and gate|up launches
  std::string kv = "dense";        // GPU: KV cache, dense or lowrank (rank-space, rebuilt every step)
  std::string kv_dtype = "auto";   // KV cache values: auto (the precision's) or fp8 (e4m3)
  bool kv_fp8() const { return kv_dtype == "fp8"; }
};

// What a command does with the model, which decides its flags: `load` only
// reads it (-m, --family); `cpu` also runs it on the CPU (--tokenizer,
// --threads); `any_device` also chooses the backend (--device, --graph,
// --precision, --pdl).
enum class ModelUse { load, cpu, any_device };
std::shared_ptr<ModelFlags> add_model_flags(CLI::App& cmd, ModelUse use);
// --threads, --device and --precision of the encoder commands (embed, classify).
void add_encoder_device_flags(CLI::App& cmd, ModelFlags& flags);
// The model path, fetching the default model when none was given.
std::string resolve_model_path(const ModelFlags& flags);

}  // namespace fsvd
