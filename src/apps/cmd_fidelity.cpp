// flashsvd fidelity: greedy decoding of the chosen runtime against an fp32
// CPU reference of the same model that keeps no KV cache (eval/fidelity.h).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "eval/fidelity.h"

namespace fsvd {
namespace {

struct FidelityFlags {
  std::string prompts;
  int n = 64;
  bool json = false;
};

// One prompt per non-empty line.
std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), path, "cannot open the prompts file");
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) prompts.push_back(line);
  check(!prompts.empty(), path, "holds no prompts (one per line)");
  return prompts;
}

void run(const ModelFlags& mf, const FidelityFlags& f) {
  const std::vector<std::string> texts = read_prompts(f.prompts);
  Session s = open_session(mf);
  std::vector<std::vector<int32_t>> prompts;
  size_t longest = 0;
  for (const std::string& t : texts) {
    prompts.push_back(s.tokenizer->encode(t, s.tokenizer->adds_bos()));
    check(!prompts.back().empty(), f.prompts, "a prompt encodes to no tokens: '", t, "'");
    longest = std::max(longest, prompts.back().size());
  }
  const int ctx = static_cast<int>(longest) + f.n;
  CpuExecutor reference(s.model, ctx, mf.threads);
  const auto tested = make_executor(s.model, mf, ctx);
  std::vector<PromptFidelity> results;
  nlohmann::json per_prompt = nlohmann::json::array();
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::fprintf(stderr, "fidelity: prompt %zu/%zu\n", i + 1, prompts.size());
    results.push_back(audit_prompt(reference, *tested, prompts[i], f.n));
    const PromptFidelity& r = results.back();
    per_prompt.push_back({{"prompt", texts[i]},
                          {"exact", r.exact},
                          {"first", r.first},
                          {"token_match", r.token_match},
                          {"max_logit_error", r.max_logit_error},
                          {"mean_logit_error", r.mean_logit_error}});
  }
  const FidelitySummary sum = summarize(results);
  if (f.json) {
    const nlohmann::json j = {{"model", s.model.source},       {"device", tested->stats().device},
                              {"n", f.n},                      {"prompts", per_prompt},
                              {"exact_rate", sum.exact_rate},  {"first_token_rate", sum.first_rate},
                              {"mean_token_match", sum.mean_token_match},
                              {"max_logit_error", sum.max_logit_error},
                              {"mean_logit_error", sum.mean_logit_error}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%d prompts, %d tokens each, against an fp32 cache-free reference\n", sum.prompts, f.n);
    std::printf("exact sequence %.1f%% | first token %.1f%% | mean token match %.1f%% | logit error max %.2e mean %.2e\n",
                100 * sum.exact_rate, 100 * sum.first_rate, 100 * sum.mean_token_match, sum.max_logit_error,
                sum.mean_logit_error);
  }
}

}  // namespace

void add_fidelity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "fidelity", "Greedy decoding of the chosen runtime against an fp32, cache-free reference of the same model");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto f = std::make_shared<FidelityFlags>();
  cmd->add_option("--prompts", f->prompts, "Text file, one prompt per line")->required();
  cmd->add_option("-n,--n-predict", f->n, "Tokens to generate per prompt")->check(CLI::Range(1, 4096));
  cmd->add_flag("--json", f->json, "Print one JSON object (with per-prompt results) instead of a summary");
  cmd->callback([mf, f] { run(*mf, *f); });
}

}  // namespace fsvd
