#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "runtime/stop_strings.h"

namespace fsvd {

static double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

GenerateStats generate(Executor& executor, const Tokenizer& tokenizer,
                       std::vector<int32_t> prompt, const GenerateOptions& options,
                       const TextCallback& on_text) {
  const char* where = "generate";
  check(!prompt.empty(), where, "empty prompt (start from the BOS token instead)");
  check(static_cast<int64_t>(prompt.size()) <= executor.context_size(), where, "prompt of ",
        prompt.size(), " tokens does not fit the context of ", executor.context_size());
  check(options.max_new_tokens >= 0, where, "max_new_tokens must be >= 0, got ",
        options.max_new_tokens);
  Sampler sampler(options.sampling);
  StopStringFilter stop_text(options.stop_strings);
  std::vector<int32_t> stop_ids = tokenizer.stop_ids();
  stop_ids.insert(stop_ids.end(), options.stop_ids.begin(), options.stop_ids.end());
  // Prime the decoder with the end of the prompt, discarding its text: how a
  // token decodes can depend on the one before it (run.c drops the leading
  // space after BOS; SentencePiece drops it at the start of a sequence), and a
  // character may span up to 4 byte tokens.
  StreamDecoder stream(tokenizer);
  constexpr size_t kPrimeTokens = 4;
  for (size_t i = prompt.size() - std::min(prompt.size(), kPrimeTokens); i < prompt.size(); ++i)
    stream.push(prompt[i]);
  auto emit = [&](const std::string& text) {
    if (!text.empty()) on_text(text);
  };

  // The next token after running `tokens`: picked on the device when the
  // backend can (no logits cross to the host), else from the logits here.
  std::vector<float> logits;
  auto next_token = [&](std::span<const int32_t> tokens, int pos) {
    if (executor.samples_on_device()) return executor.forward_next(tokens, pos, options.sampling);
    executor.forward(tokens, pos, false, logits);
    return sampler.sample(logits);
  };

  GenerateStats stats;
  stats.prompt_tokens = static_cast<int>(prompt.size());
  auto start = std::chrono::steady_clock::now();
  int32_t id = next_token(prompt, 0);
  stats.prefill_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  stats.stop_reason = "length";
  int pos = static_cast<int>(prompt.size());  // where the next token runs
  // Takes a sampled token; says whether to run it and sample the one after.
  auto accept = [&](int32_t token) {
    if (stats.generated_tokens >= options.max_new_tokens) return false;
    if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
      stats.stop_reason = "eos";
      return false;
    }
    ++stats.generated_tokens;
    emit(stop_text.push(stream.push(token)));
    if (stop_text.stopped()) {
      stats.stop_reason = "stop_string";
      return false;
    }
    if (stats.generated_tokens == options.max_new_tokens) return false;
    if (pos >= executor.context_size()) {
      stats.stop_reason = "context";
      return false;
    }
    return true;
  };
  if (accept(id)) {
    if (executor.samples_on_device()) {
      executor.decode_stream(id, pos, executor.context_size() - pos, options.sampling, [&](int32_t next) {
        ++pos;
        return accept(next);
      });
    } else {
      do id = next_token(std::span(&id, 1), pos++);
      while (accept(id));
    }
  }
  if (!stop_text.stopped()) {
    emit(stop_text.push(stream.flush()));
    if (stop_text.stopped()) stats.stop_reason = "stop_string";
    emit(stop_text.flush());
  }
  stats.decode_seconds = seconds_since(start);
  return stats;
}

}  // namespace fsvd
