#include "runtime/completion.h"

#include <algorithm>

#include "core/error.h"

namespace fsvd {

Completion::Completion(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                       const GenerateOptions& options)
    : max_new_tokens_(options.max_new_tokens),
      stop_ids_(options.ignore_eos ? std::vector<int32_t>{} : tokenizer.stop_ids()),
      stream_(tokenizer),
      stop_text_(options.stop_strings) {
  check(options.max_new_tokens >= 0, "generate", "max_new_tokens must be >= 0, got ", options.max_new_tokens);
  stop_ids_.insert(stop_ids_.end(), options.stop_ids.begin(), options.stop_ids.end());
  // Prime the decoder with the end of the prompt, discarding its text: how a
  // token decodes can depend on the one before it (run.c drops the leading
  // space after BOS; SentencePiece drops it at the start of a sequence), and a
  // character may span up to 4 byte tokens.
  constexpr size_t kPrimeTokens = 4;
  for (size_t i = prompt.size() - std::min(prompt.size(), kPrimeTokens); i < prompt.size(); ++i)
    stream_.push(prompt[i]);
}

static void emit(const std::string& text, const TextCallback& on_text) {
  if (!text.empty()) on_text(text);
}

bool Completion::accept(int32_t token, const TextCallback& on_text) {
  if (generated_ >= max_new_tokens_) return false;
  if (std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end()) {
    reason_ = "eos";
    return false;
  }
  ++generated_;
  emit(stop_text_.push(stream_.push(token)), on_text);
  if (stop_text_.stopped()) {
    reason_ = "stop_string";
    return false;
  }
  return generated_ < max_new_tokens_;
}

void Completion::finish(const TextCallback& on_text) {
  if (stop_text_.stopped()) return;
  emit(stop_text_.push(stream_.flush()), on_text);
  if (stop_text_.stopped()) {
    reason_ = "stop_string";
    return;
  }
  emit(stop_text_.flush(), on_text);
}

}  // namespace fsvd
