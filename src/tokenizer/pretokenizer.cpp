#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace fsvd {

const char* const kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// LLaMA-3 (tiktoken cl100k style): letters take one leading non-letter, digits in threes.
const char* const kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as LLaMA-3 but every digit on its own.
const char* const kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

std::vector<PretokenizeStep> pretokenize_steps_for(const std::string& pre, const std::string& where) {
  // Same groups as llama.cpp's llm_tokenizer_bpe; an absent name means GPT-2.
  if (pre.empty() || pre == "gpt-2" || pre == "gpt2" || pre == "mpt" || pre == "olmo" || pre == "jais")
    return {{kGpt2SplitPattern}};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell" ||
      pre == "exaone" || pre == "minerva")
    return {{R"(\p{N})"}, {kGpt2SplitPattern}};  // every digit alone, then GPT-2
  if (pre == "llama-bpe" || pre == "llama3" || pre == "dbrx" || pre == "smaug-bpe") return {{kLlama3SplitPattern}};
  if (pre == "qwen2" || pre == "stablelm2") return {{kQwen2SplitPattern}};
  fail(where, "unsupported pre-tokenizer '", pre, "' (tokenizer.ggml.pre)");
}

struct Pretokenizer::Compiled {
  PretokenizeStep step;
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Pretokenizer::Pretokenizer(std::vector<PretokenizeStep> steps, const std::string& where) : where_(where) {
  for (auto& step : steps) {
    auto c = std::make_unique<Compiled>();
    c->step = std::move(step);
    if (!c->step.pattern.empty()) {
      // MATCH_INVALID_UTF: invalid bytes never match instead of failing the whole match.
      const uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (c->step.literal ? PCRE2_LITERAL : PCRE2_UCP);
      int code = 0;
      PCRE2_SIZE offset = 0;
      c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(c->step.pattern.data()), c->step.pattern.size(), options,
                              &code, &offset, nullptr);
      check(c->code != nullptr, where, "bad pre-tokenizer regex '", c->step.pattern, "' at offset ", offset, ": ",
            pcre2_message(code));
      pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
    }
    steps_.push_back(std::move(c));
  }
}

Pretokenizer::~Pretokenizer() = default;

std::vector<std::string> Pretokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create(1, nullptr), &pcre2_match_data_free);
  check(match != nullptr, where_, "out of memory for regex match data");
  for (const auto& c : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (c->step.add_prefix_space && piece[0] != ' ') piece.insert(0, 1, ' ');
      if (c->code == nullptr) {
        next.push_back(std::move(piece));
        continue;
      }
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t gap = 0;  // start of the text not yet emitted
      size_t pos = 0;
      while (pos < piece.size()) {
        const int rc = pcre2_match(c->code, subject, piece.size(), pos, 0, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        check(rc >= 0, where_, "pre-tokenizer regex '", c->step.pattern, "' failed: ", pcre2_message(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.get());
        const size_t begin = ov[0];
        const size_t end = ov[1];
        if (end == begin) {  // empty match: nothing to isolate, move on one character
          pos = begin + 1;
          while (pos < piece.size() && (static_cast<uint8_t>(piece[pos]) & 0xC0) == 0x80) ++pos;
          continue;
        }
        if (begin > gap) next.push_back(piece.substr(gap, begin - gap));
        next.push_back(piece.substr(begin, end - begin));
        gap = pos = end;
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace fsvd
