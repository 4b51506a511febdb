#include <cstdio>
#include <sstream>
#include <string>

#include "apps/commands.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "core/error.h"
#include "formats/npy.h"

namespace fsvd {
namespace {

struct LogitsFlags {
  std::string tokens;  // "1,17,250"
  std::string text;
  std::string out;
  bool last = false;  // only the last position's row
};

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    check(used == item.size() && !item.empty() && v >= 0 && v <= INT32_MAX, "--tokens",
          "'", item, "' is not a token id (expected comma-separated non-negative integers)");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

void run(const ModelFlags& mf, const LogitsFlags& f) {
  check(f.tokens.empty() != f.text.empty(), "logits", "give exactly one of --tokens or --text");
  Session s = open_session(mf, !f.text.empty());
  const std::vector<int32_t> ids =
      f.text.empty() ? parse_ids(f.tokens) : s.tokenizer->encode(f.text, s.tokenizer->adds_bos(), true);
  check(!ids.empty(), "logits", "no tokens");
  const auto executor = make_executor(s.model, mf, static_cast<int>(ids.size()));
  std::vector<float> logits;
  executor->forward(ids, 0, !f.last, logits);
  const int64_t vocab = s.model.config.vocab;
  const size_t rows = f.last ? 1 : ids.size(), first = ids.size() - rows;
  if (!f.out.empty()) {
    write_npy_f32(f.out, {static_cast<int64_t>(rows), vocab}, logits.data());
    std::fprintf(stderr, "wrote [%zu, %lld] fp32 logits to %s\n", rows, static_cast<long long>(vocab),
                 f.out.c_str());
    return;
  }
  for (size_t t = 0; t < rows; ++t) {  // one row per position: token id, then its logits
    std::printf("%d", ids[first + t]);
    for (int64_t v = 0; v < vocab; ++v) std::printf(" %.9g", logits[t * vocab + v]);
    std::printf("\n");
  }
}

}  // namespace

void add_logits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "Compute fp32 logits for every position of a token sequence");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto f = std::make_shared<LogitsFlags>();
  cmd->add_option("--tokens", f->tokens, "Comma-separated token ids, e.g. 1,17,250");
  cmd->add_option("--text", f->text, "Text to tokenize instead of --tokens (special tokens are parsed)");
  cmd->add_option("-o,--output", f->out, "Write a [tokens, vocab] float32 .npy file instead of text rows");
  cmd->add_flag("--last", f->last, "Only the last position's logits (a prompt's next-token distribution)");
  cmd->callback([mf, f] { run(*mf, *f); });
}

}  // namespace fsvd
