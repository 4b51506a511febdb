#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "apps/commands.h"
#include "apps/encoder_compress.h"
#include "apps/model_flags.h"
#include "apps/output_dir.h"
#include "apps/session.h"
#include "apps/store_tokenizer.h"
#include "compress/calibration.h"
#include "compress/compressor.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/log.h"
#include "families/encoder_family.h"
#include "families/native_family.h"

namespace fsvd {
namespace {

struct CompressFlags {
  double keep = 0;
  std::string out;
  std::string method = "whiten";
  std::string allocation = "uniform";
  std::string sensitivity = "matrix";
  double min_rank_fraction = 0.5;
  bool sequential = false;
  bool refit = false;
  bool refit_residual = false;
  double ridge = 1e-3;
  std::string calib;
  int64_t calib_tokens = 32768;
  int calib_ctx = 0;
  double stats_gib = 2;
  std::string stats;
  std::string dtype = "f32";
  bool force = false;
};

// An encoder directory: uniform ranks on the dense encoder's statistics, fp32.
void run_encoder(const ModelFlags& mf, const CompressFlags& f) {
  auto refuse = [](bool given, const char* flag) {
    check(!given, flag, "does not apply to encoders (they are compressed with uniform ranks on the dense "
                        "encoder's statistics and stored in fp32)");
  };
  refuse(f.allocation != "uniform", "--allocation");
  refuse(f.sequential, "--sequential");
  refuse(f.refit, "--refit");
  refuse(f.refit_residual, "--refit-residual");
  refuse(!f.stats.empty(), "--stats");
  refuse(f.calib_ctx != 0, "--calib-ctx");
  refuse(f.dtype != "f32", "--dtype");
  refuse(!mf.tokenizer.empty(), "--tokenizer");
  compress_encoder_dir({mf.model, f.out, f.keep, f.method, f.calib, f.calib_tokens, f.stats_gib, mf.threads, f.force});
}

void run(const ModelFlags& mf, const CompressFlags& f) {
  check(f.keep > 0 && f.keep < 1, "--ratio", "the kept parameter ratio must be in (0, 1), got ", f.keep);
  if (!mf.model.empty() && mf.family.empty() && encoder_mismatch(mf.model).empty()) return run_encoder(mf, f);
  CompressOptions options;
  options.keep = f.keep;
  options.method = f.method == "svd" ? CompressMethod::Svd : CompressMethod::Whiten;
  const std::map<std::string, RankAllocation> allocations = {
      {"uniform", RankAllocation::Uniform}, {"loss", RankAllocation::Loss}, {"budget", RankAllocation::Budget}};
  options.allocation = allocations.at(f.allocation);
  options.sensitivity = f.sensitivity == "matrix" ? SensitivityProbes::PerMatrix : SensitivityProbes::TypeAndLayer;
  options.min_rank_fraction = f.min_rank_fraction;
  options.sequential = f.sequential;
  options.refit = f.refit;
  options.refit_residual = f.refit_residual;
  options.ridge = f.ridge;
  options.window = f.calib_ctx;
  options.threads = mf.threads;
  options.stats_budget_bytes = static_cast<int64_t>(f.stats_gib * double(int64_t{1} << 30));
  options.stats_path = f.stats;
  options.progress = log_info;
  const bool whiten = options.method == CompressMethod::Whiten;
  check(!whiten || !f.calib.empty(), "--calib", "whitening needs a calibration text (or use --method svd)");
  check(whiten || f.stats.empty(), "--stats", "plain SVD uses no calibration statistics");

  const std::string input = resolve_model_path(mf);
  check_output_dir(input, f.out, f.force);
  Session s = open_session(mf, whiten);
  std::vector<int32_t> calibration;
  if (whiten) {
    calibration = calibration_tokens(*s.tokenizer, read_file(f.calib, "the calibration text"), f.calib_tokens);
    if (static_cast<int64_t>(calibration.size()) < f.calib_tokens)
      log_info("note: " + f.calib + " has only " + std::to_string(calibration.size()) + " tokens; using all");
  }
  Compressed c = compress_model(s.model, calibration, options);
  if (whiten) {
    c.provenance["calibration"]["file"] = f.calib;
    c.provenance["calibration"]["slice"] = "last " + std::to_string(calibration.size()) + " tokens";
  }
  const std::map<std::string, DType> dtypes = {{"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16}};
  c.provenance["command"] = "flashsvd compress";
  save_native(c.model, f.out, NativeSaveOptions{dtypes.at(f.dtype), c.provenance});
  const bool with_tokenizer = !store_tokenizer(input, mf.tokenizer, f.out).empty();
  log_info("wrote " + f.out + (with_tokenizer ? " (with the tokenizer)" : ""));
}

}  // namespace

void add_compress_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compress", "Compress a dense model into low-rank factors (SVD-LLM whitening or plain SVD), saved natively; an "
      "encoder directory is written back as an encoder directory with factored layer linears");
  auto mf = add_model_flags(*cmd, ModelUse::cpu);
  auto f = std::make_shared<CompressFlags>();
  cmd->add_option("--ratio", f->keep,
                  "The model's kept parameter fraction, in (0, 1): embeddings, lm_head, norms and biases count and "
                  "stay dense, so the projection matrices keep less. Encoders: the kept fraction of the "
                  "transformer layers' parameters (embedding tables not counted)")
      ->required();
  cmd->add_option("-o,--output", f->out, "Output directory, native format (created; must be empty unless --force)")
      ->required();
  cmd->add_option("--method", f->method, "whiten (SVD-LLM truncation-aware whitening) or svd (plain, no data)")
      ->check(CLI::IsMember({"whiten", "svd"}))
      ->capture_default_str();
  cmd->add_option("--allocation", f->allocation,
                  "uniform ranks; loss: per-matrix ranks within each type chosen by truncation loss; budget: one "
                  "budget across all matrices (any may keep more rank or stay dense) by measured sensitivity")
      ->check(CLI::IsMember({"uniform", "loss", "budget"}))
      ->capture_default_str();
  cmd->add_option("--sensitivity", f->sensitivity,
                  "Budget allocation's probes: matrix (one KL probe per matrix) or type-layer (one per matrix type "
                  "and one per layer: fewer probes, a separable estimate)")
      ->check(CLI::IsMember({"matrix", "type-layer"}))
      ->capture_default_str();
  cmd->add_option("--min-rank-fraction", f->min_rank_fraction,
                  "Budget allocation: no matrix keeps less than this fraction of its uniform rank")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag("--sequential", f->sequential,
                "Calibrate layer by layer on the partly compressed model's activations (whiten only)");
  cmd->add_flag("--refit", f->refit,
                "Fit every matrix to the dense model's outputs (reduced-rank regression, error compensation; "
                "needs --sequential)");
  cmd->add_flag("--refit-residual", f->refit_residual,
                "Fit o and down to the dense model's residual stream after their add (reduced-rank regression), "
                "so they also cancel the error upstream layers left there (needs --sequential)");
  cmd->add_option("--ridge", f->ridge, "Re-fit ridge, relative to the mean diagonal of the input statistics")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--calib", f->calib,
                  "Calibration text file (needed by whiten); encoders: one sentence per non-empty line");
  cmd->add_option("--calib-tokens", f->calib_tokens,
                  "Calibrate on the last N tokens of the text (encoders: its last lines holding N tokens)")
      ->check(CLI::Range(int64_t{1}, INT64_MAX))
      ->capture_default_str();
  cmd->add_option("--calib-ctx", f->calib_ctx, "Calibration window in tokens (default: model context, at most 2048)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--stats-gib", f->stats_gib,
                  "Memory for calibration statistics; layers that fit share one pass over the text")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--stats", f->stats,
                  "Calibration statistics file: read when it exists (same model and calibration), else written; "
                  "compressions at other ratios or allocations then skip calibration");
  cmd->add_option("--dtype", f->dtype, "Stored dtype of the matrices")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--force", f->force, "Replace the model files in a non-empty output directory");
  cmd->callback([mf, f] { run(*mf, *f); });
}

}  // namespace fsvd
