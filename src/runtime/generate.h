#pragma once
// The decode loop: prefill the prompt in one forward, then sample (on the
// device when the backend can: Executor::forward_next) and feed one
// token at a time, streaming text to a callback until a stop rule fires.
#include <cstdint>
#include <string>
#include <vector>

#include "backends/executor.h"
#include "runtime/completion.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct GenerateStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;  // tokens sampled, not counting a final stop id
  double prefill_seconds = 0;
  double decode_seconds = 0;  // every forward after the prefill, plus sampling
  // "eos": a stop id was sampled (it is not printed); "stop_string"; "length":
  // max_new_tokens reached; "context": the cache is full.
  std::string stop_reason;
};

// Generates after `prompt` (non-empty: pass {bos} for an empty prompt; at most
// executor.context_size() tokens) from position 0 of the executor's cache.
GenerateStats generate(Executor& executor, const Tokenizer& tokenizer,
                       std::vector<int32_t> prompt, const GenerateOptions& options,
                       const TextCallback& on_text);

}  // namespace fsvd
