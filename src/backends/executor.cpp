#include "backends/executor.h"

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
