#pragma once
// Pre-tokenization of byte-level BPE: text is cut into words by a sequence of
// Unicode-aware regexes (PCRE2) before merges run inside each word. Each step
// splits every current piece, keeping both the matches and the gaps between
// them (Hugging Face's "Isolated" behaviour, llama.cpp's unicode_regex_split).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fsvd {

struct PretokenizeStep {
  std::string pattern;            // PCRE2 syntax; empty: no split
  bool literal = false;           // pattern is a plain string, not a regex
  bool add_prefix_space = false;  // prepend " " to pieces that do not start with one
};

// The steps llama.cpp uses for a GGUF `tokenizer.ggml.pre` name (e.g. "gpt-2",
// "llama-bpe", "smollm", "qwen2"); throws Error naming `where` for unknown names.
std::vector<PretokenizeStep> pretokenize_steps_for(const std::string& pre, const std::string& where);

// GPT-2's word regex (Hugging Face ByteLevel with use_regex).
extern const char* const kGpt2SplitPattern;

class Pretokenizer {
 public:
  Pretokenizer(std::vector<PretokenizeStep> steps, const std::string& where);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Words of `text` in order; their concatenation is `text` plus any prefix spaces.
  // Invalid UTF-8 is allowed: bytes that cannot match end up in gap pieces.
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Compiled;
  std::vector<std::unique_ptr<Compiled>> steps_;
  std::string where_;
};

}  // namespace fsvd
