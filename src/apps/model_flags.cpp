#include "apps/model_flags.h"

#include "apps/default_model.h"

namespace fsvd {

namespace {

void add_device_flag(CLI::App& cmd, ModelFlags& flags) {
  cmd.add_option("--device", flags.device, "Backend: auto (the GPU when present and supported), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}
void add_precision_flag(CLI::App& cmd, ModelFlags& flags, const char* what) {
  cmd.add_option("--precision", flags.precision, std::string(what) + ": bf16, or fp32 for exact checks against the CPU")
      ->check(CLI::IsMember({"bf16", "fp32"}));
}
void add_threads_flag(CLI::App& cmd, ModelFlags& flags) {
  cmd.add_option("-t,--threads", flags.threads, "CPU threads (0: all)")->check(CLI::Range(0, 1024));
}

}  // namespace

void add_encoder_device_flags(CLI::App& cmd, ModelFlags& flags) {
  add_threads_flag(cmd, flags);
  add_device_flag(cmd, flags);
  add_precision_flag(cmd, flags, "GPU weights and activations");
}

std::shared_ptr<ModelFlags> add_model_flags(CLI::App& cmd, ModelUse use) {
  auto flags = std::make_shared<ModelFlags>();
  cmd.add_option("-m,--model", flags->model,
                 "Model file or directory (GGUF, llama2.c .bin, Hugging Face dir); default: SmolLM2-135M-Instruct");
  cmd.add_option("--family", flags->family, "Force a checkpoint family instead of detecting it");
  if (use == ModelUse::load) return flags;
  cmd.add_option("--tokenizer", flags->tokenizer,
                 "Tokenizer file (llama2.c .bin, SentencePiece .model, tokenizer.json) when not in the model");
  add_threads_flag(cmd, *flags);
  if (use == ModelUse::cpu) return flags;
  add_device_flag(cmd, *flags);
  cmd.add_option("--graph", flags->graph,
                 "GPU decode step as CUDA graphs: model (one graph), layer (one per layer) or none")
      ->check(CLI::IsMember({"none", "layer", "model"}));
  add_precision_flag(cmd, *flags, "GPU weights and KV cache");
  cmd.add_option("--pdl", flags->pdl, "GPU decode: programmatic dependent launch between GEMVs (on or off)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_option("--pack", flags->pack, "GPU decode: packed q|k|v and gate|up projections (on, or off: one launch each)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_option("--kv", flags->kv,
                 "GPU KV cache: dense, or lowrank (rank-space k/v, the context rebuilt every step: less memory, slower)")
      ->check(CLI::IsMember({"dense", "lowrank"}));
  cmd.add_option("--kv-dtype", flags->kv_dtype,
                 "KV cache values: auto (bf16 on the GPU, fp32 on the CPU; fp32 with --precision fp32) or fp8 "
                 "(e4m3, rounded as stored: half bf16's bytes, so twice the positions and faster attention; the CPU "
                 "rounds the same way)")
      ->check(CLI::IsMember({"auto", "fp8"}));
  return flags;
}

std::string resolve_model_path(const ModelFlags& flags) {
  return flags.model.empty() ? ensure_default_model() : flags.model;
}

}  // namespace fsvd
