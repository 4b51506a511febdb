#include "eval/fidelity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace fsvd {
namespace {

int32_t argmax(const float* v, size_t n) { return static_cast<int32_t>(std::max_element(v, v + n) - v); }

double relative_error(const float* got, const float* want, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    den += double{want[i]} * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

PromptFidelity audit_prompt(Executor& reference, Executor& tested, const std::vector<int32_t>& prompt, int n) {
  const char* where = "fidelity";
  check(!prompt.empty() && n >= 1, where, "needs a prompt and at least one token to generate");
  const size_t vocab = static_cast<size_t>(reference.vocab_size());
  check(tested.vocab_size() == reference.vocab_size(), where, "the runtimes' vocabularies differ");
  const int total = static_cast<int>(prompt.size()) + n;
  check(reference.context_size() >= total && tested.context_size() >= total, where, "a context of ", total,
        " tokens is needed");
  PromptFidelity r;
  std::vector<float> logits;

  // Reference: no cache, the whole sequence from position 0 at every step.
  std::vector<int32_t> seq = prompt;
  std::vector<float> ref_logits;
  for (int i = 0; i < n; ++i) {
    reference.forward(seq, 0, false, logits);
    ref_logits.insert(ref_logits.end(), logits.begin(), logits.end());
    seq.push_back(argmax(logits.data(), vocab));
    r.reference.push_back(seq.back());
  }

  // Tested: free-running greedy decode with its cache.
  tested.forward(prompt, 0, false, logits);
  r.tested.push_back(argmax(logits.data(), vocab));
  for (int i = 1; i < n; ++i) {
    tested.forward({&r.tested.back(), 1}, static_cast<int>(prompt.size()) + i - 1, false, logits);
    r.tested.push_back(argmax(logits.data(), vocab));
  }
  int equal = 0;
  for (int i = 0; i < n; ++i) equal += r.reference[i] == r.tested[i];
  r.exact = equal == n;
  r.first = r.reference[0] == r.tested[0];
  r.token_match = static_cast<double>(equal) / n;

  // Tested logits on the reference's tokens, one forward with every row.
  seq.pop_back();
  tested.forward(seq, 0, true, logits);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const size_t row = prompt.size() - 1 + static_cast<size_t>(i);
    const double e = relative_error(logits.data() + row * vocab, ref_logits.data() + i * vocab, vocab);
    r.max_logit_error = std::max(r.max_logit_error, e);
    sum += e;
  }
  r.mean_logit_error = sum / n;
  return r;
}

FidelitySummary summarize(const std::vector<PromptFidelity>& results) {
  FidelitySummary s;
  s.prompts = static_cast<int>(results.size());
  if (results.empty()) return s;
  double err_sum = 0;
  for (const PromptFidelity& r : results) {
    s.exact_rate += r.exact;
    s.first_rate += r.first;
    s.mean_token_match += r.token_match;
    s.max_logit_error = std::max(s.max_logit_error, r.max_logit_error);
    err_sum += r.mean_logit_error;
  }
  s.exact_rate /= s.prompts;
  s.first_rate /= s.prompts;
  s.mean_token_match /= s.prompts;
  s.mean_logit_error = err_sum / s.prompts;
  return s;
}

}  // namespace fsvd
