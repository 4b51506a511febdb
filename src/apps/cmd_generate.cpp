#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "apps/commands.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "core/error.h"
#include "runtime/generate.h"
#include "tokenizer/chat_template.h"

namespace fsvd {
namespace {

struct GenerateFlags {
  std::string prompt;
  std::string system;
  bool chat = false;
  int n = 256;
  int ctx = 0;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool json = false;
};

std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const GenerateFlags& f) {
  if (f.chat) {
    std::vector<ChatMessage> messages;
    if (!f.system.empty()) messages.push_back({"system", f.system});
    messages.push_back({"user", f.prompt});
    return tok.encode(apply_chat_template(tok, messages, true), tok.adds_bos(), true);
  }
  check(f.system.empty(), "--system", "only applies with --chat");
  if (f.prompt.empty()) {
    check(tok.bos_id() >= 0, "--prompt", "empty prompt, and this tokenizer has no BOS token to start from");
    return {tok.bos_id()};
  }
  return tok.encode(f.prompt, tok.adds_bos());
}

void run(const ModelFlags& mf, const GenerateFlags& f) {
  Session s = open_session(mf);
  const std::vector<int32_t> prompt = prompt_tokens(*s.tokenizer, f);
  const int want = static_cast<int>(prompt.size()) + f.n;
  const int ctx = f.ctx > 0 ? f.ctx : s.model.config.max_seq > 0 ? std::min(want, s.model.config.max_seq) : want;
  check(static_cast<int>(prompt.size()) <= ctx, "--ctx", "the prompt has ", prompt.size(),
        " tokens but the context holds ", ctx);
  const auto executor = make_executor(s.model, mf, ctx);

  GenerateOptions options;
  options.max_new_tokens = f.n;
  options.stop_strings = f.stop;
  options.sampling = {f.temperature, f.top_k, f.top_p,
                      f.seed >= 0 ? static_cast<uint64_t>(f.seed) : std::random_device{}()};
  if (f.temperature > 0 && f.seed < 0)
    std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(options.sampling.seed));

  std::string text;
  const GenerateStats st = generate(*executor, *s.tokenizer, prompt, options, [&](std::string_view piece) {
    if (f.json) {
      text += piece;
    } else {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  });
  const double prefill_tps = st.prefill_seconds > 0 ? st.prompt_tokens / st.prefill_seconds : 0;
  const double decode_tps = st.decode_seconds > 0 ? st.generated_tokens / st.decode_seconds : 0;
  if (f.json) {
    const nlohmann::json j = {{"text", text},
                              {"prompt_tokens", st.prompt_tokens},
                              {"generated_tokens", st.generated_tokens},
                              {"prefill_seconds", st.prefill_seconds},
                              {"decode_seconds", st.decode_seconds},
                              {"prefill_tokens_per_second", prefill_tps},
                              {"decode_tokens_per_second", decode_tps},
                              {"stop_reason", st.stop_reason}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
  }
  std::fprintf(stderr, "prefill: %d tokens, %.1f tokens/s | decode: %d tokens, %.1f tokens/s | stop: %s\n",
               st.prompt_tokens, prefill_tps, st.generated_tokens, decode_tps, st.stop_reason.c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt, streaming it to stdout");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto f = std::make_shared<GenerateFlags>();
  cmd->add_option("-p,--prompt", f->prompt, "Prompt text (empty: start from BOS)");
  cmd->add_flag("--chat", f->chat, "Wrap the prompt as a user message in the model's chat template");
  cmd->add_option("--system", f->system, "System message (with --chat)");
  cmd->add_option("-n,--n-predict", f->n, "Maximum number of new tokens")->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--ctx", f->ctx, "Context size to allocate (default: prompt + n, capped by the model)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--temp", f->temperature, "Sampling temperature (0: greedy)")->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", f->top_k, "Keep the k most likely tokens (0: off)")->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--top-p", f->top_p, "Nucleus sampling mass (1: off)")->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--seed", f->seed, "Random seed (default: random)")->check(CLI::Range(int64_t{0}, INT64_MAX));
  cmd->add_option("--stop", f->stop, "Stop when this text is generated (repeatable)");
  cmd->add_flag("--json", f->json, "Print one JSON object with the text and timings instead of streaming");
  cmd->callback([mf, f] { run(*mf, *f); });
}

}  // namespace fsvd
