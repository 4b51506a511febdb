// flashsvd convert: any supported checkpoint → the native format (a directory
// of model.safetensors + flashsvd.json + the tokenizer), which loads fastest.
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/model_flags.h"
#include "apps/output_dir.h"
#include "apps/store_tokenizer.h"
#include "core/error.h"
#include "families/config_json.h"
#include "families/encoder_family.h"
#include "families/encoder_writer.h"
#include "families/load.h"
#include "families/native_family.h"
#include "model/summary.h"
#include "apps/synthetic_flags.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

struct ConvertFlags {
  std::string input;  // positional, or -m
  std::string out;
  std::string dtype = "f32";
  std::string tokenizer;
  bool force = false;
};

DType parse_dtype(const std::string& s) {
  if (s == "f16") return DType::F16;
  if (s == "bf16") return DType::BF16;
  return DType::F32;
}

// The model to write: loaded from the input, or synthetic (model/synthetic.h),
// whose bf16-exact weights let peer runtimes read the very model `bench --synthetic` runs.
Model source_model(const std::string& in, const ModelFlags& mf, const SyntheticFlags& sf) {
  if (!sf.given()) {
    std::fprintf(stderr, "loading %s\n", in.c_str());
    return load_model(in, LoadOptions{mf.family});
  }
  std::fprintf(stderr, "building synthetic %s at ratio %g\n", sf.name.c_str(), sf.ratio);
  return make_synthetic_model(sf.spec());
}

// An encoder directory is written back as one (save_encoder), its matrices
// stored as --dtype; a compressed encoder keeps its compression record.
void convert_encoder(const std::string& in, const ConvertFlags& f) {
  check(f.tokenizer.empty(), "--tokenizer", "does not apply to encoders (they carry their vocabulary)");
  std::fprintf(stderr, "loading %s\n", in.c_str());
  const EncoderModel model = load_encoder(in);
  const fs::path record = fs::path(in) / kEncoderProvenanceFile;
  const nlohmann::json provenance = fs::exists(record) ? read_json_file(record.string()) : nlohmann::json();
  const DType dtype = parse_dtype(f.dtype);
  save_encoder(model, in, f.out, provenance, dtype);
  std::fprintf(stderr, "wrote %s: %s encoder, %lld parameters, matrices as %s\n", f.out.c_str(),
               model.config.arch.c_str(), static_cast<long long>(model.unique_params()), dtype_name(dtype).c_str());
}

void run(ModelFlags mf, const SyntheticFlags& sf, const ConvertFlags& f) {
  check(f.input.empty() || mf.model.empty() || f.input == mf.model, "convert",
        "give the input once: as the positional argument or as -m");
  if (!f.input.empty()) mf.model = f.input;
  const bool synthetic = sf.given();
  check(!synthetic || mf.model.empty(), "--synthetic", "give either --synthetic or a model to convert, not both");
  const std::string in = synthetic ? "" : resolve_model_path(mf);
  check_output_dir(in, f.out, f.force);
  if (!synthetic && mf.family.empty() && encoder_mismatch(in).empty()) return convert_encoder(in, f);

  const Model model = source_model(in, mf, sf);
  NativeSaveOptions options;
  options.dtype = parse_dtype(f.dtype);
  options.provenance = {{"command", "flashsvd convert"}};
  if (synthetic)
    options.provenance.update({{"synthetic", sf.name}, {"ratio", sf.ratio}, {"rank_spread", sf.rank_spread}});
  save_native(model, f.out, options);

  // A synthetic model has a tokenizer only when --tokenizer names one.
  const std::vector<std::string> tokenizer =
      synthetic && f.tokenizer.empty() ? std::vector<std::string>{} : store_tokenizer(in, f.tokenizer, f.out);
  if (!tokenizer.empty()) {
    const auto tok = load_tokenizer(f.out, "");  // the copy must load as the source did
    check(tok->vocab_size() <= model.config.vocab, f.out, "tokenizer has ", tok->vocab_size(),
          " tokens but the model only ", model.config.vocab);
  } else if (!synthetic) {
    std::fprintf(stderr, "note: %s carries no tokenizer; pass --tokenizer to convert (or to generate) to add one\n",
                 in.c_str());
  }

  const ModelSummary s = summarize(model);
  std::string names;
  for (const std::string& n : tokenizer) names += " " + n;
  std::fprintf(stderr,
               "wrote %s: %s model, %lld parameters (dense equivalent %lld), %zu shared factors, "
               "matrices as %s, %.1f MB%s%s\n",
               f.out.c_str(), model.family.c_str(), static_cast<long long>(s.unique_params),
               static_cast<long long>(s.dense_params), s.shared.size(), dtype_name(options.dtype).c_str(),
               fs::file_size(fs::path(f.out) / kNativeWeightsFile) / 1e6, tokenizer.empty() ? "" : ", tokenizer:",
               names.c_str());
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert",
      "Write a model in flashsvd's native format (safetensors + flashsvd.json), the fastest to load; an encoder "
      "directory is written back as an encoder directory (its matrices as --dtype)");
  auto mf = add_model_flags(*cmd, ModelUse::load);
  auto f = std::make_shared<ConvertFlags>();
  cmd->add_option("input", f->input, "Model file or directory to convert (or -m)");
  auto sf = add_synthetic_flags(*cmd);
  cmd->add_option("-o,--output", f->out, "Output directory (created; must be empty unless --force)")->required();
  cmd->add_option("--dtype", f->dtype, "Storage of the matrices: f32 (exact), f16 or bf16; norms stay f32")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_option("--tokenizer", f->tokenizer,
                  "Tokenizer to store with the model when the checkpoint has none (llama2.c tokenizer.bin, "
                  ".model, tokenizer.json)");
  cmd->add_flag("--force", f->force, "Replace the model files in a non-empty output directory");
  cmd->callback([mf, sf, f] { run(*mf, *sf, *f); });
}

}  // namespace fsvd
