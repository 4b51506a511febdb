#include "runtime/generate.h"

#include <chrono>

#include "core/error.h"
#include "runtime/completion.h"

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
  Completion completion(tokenizer, prompt, options);
  Sampler sampler(options.sampling);

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
  int pos = static_cast<int>(prompt.size());  // where the next token runs
  // Takes a sampled token; says whether to run it and sample the one after.
  auto accept = [&](int32_t token) {
    if (!completion.accept(token, on_text)) return false;
    if (pos >= executor.context_size()) {
      completion.end("context");
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
  completion.finish(on_text);
  stats.generated_tokens = completion.generated();
  stats.stop_reason = completion.stop_reason();
  stats.decode_seconds = seconds_since(start);
  return stats;
}

}  // namespace fsvd
