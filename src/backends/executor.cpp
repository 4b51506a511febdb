#include "backends/executor.h"

#include <vector>

#include "core/error.h"

namespace fsvd {

void check_forward_request(const std::string& where, std::span<const int32_t> tokens, int pos, int filled,
                           int context, int vocab) {
  check(!tokens.empty(), where, "no tokens to run");
  check(pos >= 0 && pos <= filled, where, "position ", pos, " is outside the ", filled,
        " cached positions (a forward may start at most right after them)");
  check(tokens.size() <= static_cast<size_t>(context - pos), where, tokens.size(), " tokens at position ", pos,
        " exceed the context size ", context);
  for (size_t i = 0; i < tokens.size(); ++i)
    check(tokens[i] >= 0 && tokens[i] < vocab, where, "token id ", tokens[i], " at index ", i,
          " is outside the vocabulary [0, ", vocab, ")");
}

int64_t check_step_request(const std::string& where, std::span<const SeqSlice> batch, const KvPages& pages,
                           int context, int vocab) {
  check(!batch.empty(), where, "no sequences to run");
  std::vector<bool> written(pages.blocks, false);
  int64_t rows = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SeqSlice& q = batch[s];
    const int64_t n = static_cast<int64_t>(q.tokens.size());
    check(n > 0, where, "sequence ", s, " has no tokens to run");
    check(q.pos >= 0 && q.pos + n <= context, where, "sequence ", s, ": ", n, " tokens at position ", q.pos,
          " exceed the context size ", context);
    const int64_t need = pages.blocks_for(q.pos + n);
    check(static_cast<int64_t>(q.blocks.size()) >= need, where, "sequence ", s, " has ", q.blocks.size(),
          " blocks, positions up to ", q.pos + n, " need ", need);
    for (int64_t b = 0; b < need; ++b) {
      const int32_t id = q.blocks[b];
      check(id >= 0 && id < pages.blocks, where, "sequence ", s, ": block ", id, " is outside the cache's ",
            pages.blocks, " blocks");
      if (b < q.pos / pages.block_size) continue;  // read only
      check(!written[id], where, "block ", id, " is written by two sequences of one step");
      written[id] = true;
    }
    for (int64_t i = 0; i < n; ++i)
      check(q.tokens[i] >= 0 && q.tokens[i] < vocab, where, "sequence ", s, ": token id ", q.tokens[i],
            " is outside the vocabulary [0, ", vocab, ")");
    rows += n;
  }
  return rows;
}

KvPages Executor::kv_pages() const { return KvPages::holding(context_size()); }

void Executor::step(std::span<const SeqSlice>, std::vector<float>&) {
  fail("Executor::step", "this backend runs one sequence at a time so far");
}

void Executor::step_sample(std::span<const SeqSlice>, std::span<const SamplingParams>, std::vector<int32_t>&) {
  fail("Executor::step_sample", "this backend does not sample on the device");
}

int32_t Executor::forward_next(std::span<const int32_t>, int, const SamplingParams&) {
  fail("Executor::forward_next", "this backend does not sample on the device");
}

int Executor::decode_stream(int32_t token, int pos, int count, const SamplingParams& params,
                            const std::function<bool(int32_t)>& on_token) {
  for (int i = 0; i < count; ++i) {
    token = forward_next({&token, 1}, pos + i, params);
    if (!on_token(token)) return i + 1;
  }
  return count;
}

}  // namespace fsvd
