#include "apps/engine_flags.h"

#include <algorithm>

namespace fsvd {

int EngineFlags::context(int max_seq) const {
  constexpr int kDefaultContext = 4096;
  if (ctx > 0) return ctx;
  return max_seq > 0 ? std::min(max_seq, kDefaultContext) : kDefaultContext;
}

EngineOptions EngineFlags::options() const {
  EngineOptions o = engine;
  o.chunked_prefill = !no_chunked_prefill;
  return o;
}

std::shared_ptr<EngineFlags> add_engine_flags(CLI::App& cmd, const EngineOptions& defaults) {
  auto f = std::make_shared<EngineFlags>();
  f->engine = defaults;
  cmd.add_option("--ctx", f->ctx, "Most positions of one sequence (default: the model's, at most 4096)")
      ->check(CLI::Range(1, 1 << 24));
  cmd.add_option("--kv-tokens", f->kv_tokens,
                 "Positions the KV cache holds for all sequences together (default: on the GPU, --kv-memory of its "
                 "free memory; on the CPU, --max-batch contexts up to 32768)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd.add_option("--kv-memory", f->kv_memory, "Share of the GPU's free memory the KV cache takes")
      ->check(CLI::Range(0.01, 0.99));
  cmd.add_option("--max-batch", f->engine.max_batch, "Sequences in one step")->check(CLI::Range(1, 4096));
  cmd.add_option("--max-queue", f->engine.max_queue, "Requests waiting for a batch slot")->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--step-tokens", f->engine.step_tokens, "Token rows in one step (prompt chunks and decode rows)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_flag("--no-chunked-prefill", f->no_chunked_prefill, "Read each prompt whole in the step that admits it");
  cmd.add_flag("--batch-invariant", f->engine.batch_invariant,
               "A request's output bitwise as it is alone, whatever shares its steps: prompt chunks fixed by "
               "position, GPU decode rows with one row's arithmetic (at most 16 rows a decode step; slower)");
  return f;
}

}  // namespace fsvd
