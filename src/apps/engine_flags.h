#pragma once
// The flags of the commands that run the batching engine (`batch`, `serve`):
// context, KV cache size, batch, queue and step limits.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>

#include "apps/executor_choice.h"
#include "runtime/engine.h"

namespace fsvd {

struct EngineFlags {
  int ctx = 0;            // 0: the model's, at most 4096
  int64_t kv_tokens = 0;  // 0: the backend's default
  double kv_memory = 0.9;
  EngineOptions engine;
  bool no_chunked_prefill = false;

  // Positions of one sequence for a model trained on `max_seq` (0: unknown).
  int context(int max_seq) const;
  BatchShape shape() const {
    return {kv_tokens > 0 ? kv_tokens : -1, engine.max_batch, kv_memory, engine.batch_invariant};
  }
  EngineOptions options() const;
};

// --ctx, --kv-tokens, --kv-memory, --max-batch, --max-queue, --step-tokens,
// --no-chunked-prefill, --batch-invariant on `cmd`, starting from `defaults`.
std::shared_ptr<EngineFlags> add_engine_flags(CLI::App& cmd, const EngineOptions& defaults);

}  // namespace fsvd
