#include "apps/encoder_compress.h"

#include "apps/encoder_session.h"
#include "apps/output_dir.h"
#include "compress/encoder_calibration.h"
#include "compress/encoder_compressor.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "families/encoder_writer.h"

namespace fsvd {

void compress_encoder_dir(const EncoderCompressRun& run) {
  const bool whiten = run.method == "whiten";
  check(!whiten || !run.calib.empty(), "--calib", "whitening needs a calibration text (or use --method svd)");
  check_output_dir(run.model, run.out, run.force);
  const EncoderSession s = open_encoder(run.model);
  std::vector<EncoderInput> calibration;
  if (whiten) {
    calibration = encoder_calibration_inputs(*s.tokenizer, read_file(run.calib, "the calibration text"),
                                             run.calib_tokens, s.model.max_tokens, run.calib);
    int64_t tokens = 0;
    for (const EncoderInput& in : calibration) tokens += static_cast<int64_t>(in.ids.size());
    if (tokens < run.calib_tokens)
      log_info("note: " + run.calib + " has only " + std::to_string(tokens) + " tokens in its lines; using all");
  }
  EncoderCompressOptions options;
  options.keep = run.keep;
  options.method = whiten ? CompressMethod::Whiten : CompressMethod::Svd;
  options.threads = run.threads;
  options.stats_budget_bytes = static_cast<int64_t>(run.stats_gib * double(int64_t{1} << 30));
  options.progress = log_info;
  const size_t lines = calibration.size();
  CompressedEncoder c = compress_encoder(s.model, std::move(calibration), options);
  if (whiten) {
    c.provenance["calibration"]["file"] = run.calib;
    c.provenance["calibration"]["slice"] = "the last " + std::to_string(lines) +
                                           " non-empty lines, one input each, truncated to " +
                                           std::to_string(s.model.max_tokens) + " tokens";
  }
  c.provenance["command"] = "flashsvd compress";
  save_encoder(c.model, s.path, run.out, c.provenance);
  log_info("wrote " + run.out);
}

}  // namespace fsvd
