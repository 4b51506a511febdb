#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "apps/commands.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "core/error.h"
#include "core/read_file.h"
#include "eval/perplexity.h"

namespace fsvd {
namespace {

struct PplFlags {
  std::string text;
  int ctx = 0;
  int64_t max_windows = 0;
  bool json = false;
};

void run(const ModelFlags& mf, const PplFlags& f) {
  const std::string text = read_file(f.text, "the text file");
  Session s = open_session(mf);
  const std::vector<int32_t> ids = s.tokenizer->encode(text, s.tokenizer->adds_bos());
  const int max_seq = s.model.config.max_seq;
  const int ctx = f.ctx > 0 ? f.ctx : std::min(max_seq > 0 ? max_seq : 2048, 2048);
  const auto executor = make_executor(s.model, mf, ctx);
  std::fprintf(stderr, "%s: %zu tokens, windows of %d\n", f.text.c_str(), ids.size(), ctx);
  const auto start = std::chrono::steady_clock::now();
  const Perplexity p = windowed_perplexity(*executor, ids, ctx, f.max_windows);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (f.json) {
    const nlohmann::json j = {{"model", s.model.source}, {"text", f.text},       {"ctx", ctx},
                              {"text_tokens", ids.size()}, {"windows", p.windows}, {"predictions", p.predictions},
                              {"nll", p.nll},              {"perplexity", p.perplexity}, {"seconds", secs}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("perplexity %.4f (nll %.5f) over %lld windows of %d tokens (%lld predictions)\n", p.perplexity,
                p.nll, static_cast<long long>(p.windows), ctx, static_cast<long long>(p.predictions));
  }
  std::fprintf(stderr, "scored in %.2f s\n", secs);
}

}  // namespace

void add_ppl_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "ppl", "Perplexity of a text (SVD-LLM protocol: independent non-overlapping windows from position 0)");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto f = std::make_shared<PplFlags>();
  cmd->add_option("--text", f->text, "Text file, tokenized whole (BOS as the tokenizer adds it)")->required();
  cmd->add_option("--ctx", f->ctx, "Window length in tokens (default: the model's context, at most 2048)")
      ->check(CLI::Range(2, 1 << 24));
  cmd->add_option("--max-windows", f->max_windows, "Score only the first N windows (0: all)")
      ->check(CLI::Range(int64_t{0}, INT64_MAX));
  cmd->add_flag("--json", f->json, "Print one JSON object instead of a line");
  cmd->callback([mf, f] { run(*mf, *f); });
}

}  // namespace fsvd
