#include "runtime/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

namespace fsvd {
namespace {

// Pieces by id; id 0 is BOS, id 1 EOS, the rest text.
class FakeTokenizer : public Tokenizer {
 public:
  explicit FakeTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  // Like run.c, a piece's leading space is dropped right after BOS.
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] <= 1) continue;
      const std::string& p = pieces_.at(ids[i]);
      s += i > 0 && ids[i - 1] == 0 && p[0] == ' ' ? p.substr(1) : p;
    }
    return s;
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  int32_t bos_id() const override { return 0; }
  int32_t eos_id() const override { return 1; }

 private:
  std::vector<std::string> pieces_;
};

// The i-th forward returns logits peaked at script[i]; records every call.
class ScriptedExecutor : public Executor {
 public:
  struct Call {
    std::vector<int32_t> tokens;
    int pos;
  };
  ScriptedExecutor(std::vector<int32_t> script, int vocab, int context)
      : script_(std::move(script)), vocab_(vocab), context_(context) {}
  void forward(std::span<const int32_t> tokens, int pos, bool all_logits,
               std::vector<float>& logits) override {
    EXPECT_FALSE(all_logits);
    calls.push_back({{tokens.begin(), tokens.end()}, pos});
    logits.assign(vocab_, 0.0f);
    logits.at(script_.at(calls.size() - 1)) = 5.0f;
  }
  int context_size() const override { return context_; }
  int vocab_size() const override { return vocab_; }
  std::vector<Call> calls;

 private:
  std::vector<int32_t> script_;
  int vocab_, context_;
};

const std::vector<std::string> kPieces = {"<s>", "</s>", "Hel", "lo", " Wor", "ld", "!", "\xE2\x82",
                                          "\xAC"};

struct Outcome {
  std::string text;
  std::vector<std::string> chunks;
  GenerateStats stats;
};

Outcome run(ScriptedExecutor& ex, std::vector<int32_t> prompt, const GenerateOptions& opt) {
  FakeTokenizer tok(kPieces);
  Outcome r;
  r.stats = generate(ex, tok, std::move(prompt), opt, [&](std::string_view s) {
    r.chunks.emplace_back(s);
    r.text += s;
  });
  return r;
}

TEST(Generate, StopsOnEosWithoutPrintingItAndFeedsEachTokenOnce) {
  ScriptedExecutor ex({2, 3, 4, 5, 1, 6}, 9, 32);
  const Outcome r = run(ex, {0, 6, 6}, {});
  EXPECT_EQ(r.text, "Hello World");
  EXPECT_EQ(r.stats.stop_reason, "eos");
  EXPECT_EQ(r.stats.prompt_tokens, 3);
  EXPECT_EQ(r.stats.generated_tokens, 4);
  ASSERT_EQ(ex.calls.size(), 5u);  // prefill + 4 decodes, none after EOS
  EXPECT_EQ(ex.calls[0].tokens, (std::vector<int32_t>{0, 6, 6}));
  EXPECT_EQ(ex.calls[0].pos, 0);
  for (int i = 1; i < 5; ++i) {
    EXPECT_EQ(ex.calls[i].tokens, std::vector<int32_t>{2 + i - 1});
    EXPECT_EQ(ex.calls[i].pos, 2 + i);
  }
}

// A backend that samples on the device gets forward_next calls with the
// request's sampling parameters, and no logits are read on the host.
class DeviceSamplingExecutor : public ScriptedExecutor {
 public:
  using ScriptedExecutor::ScriptedExecutor;
  bool samples_on_device() const override { return true; }
  int32_t forward_next(std::span<const int32_t> tokens, int pos, const SamplingParams& params) override {
    seeds.push_back(params.seed);
    std::vector<float> logits;
    forward(tokens, pos, false, logits);
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  std::vector<uint64_t> seeds;
};

TEST(Generate, DeviceSamplingBackendsPickTheTokens) {
  DeviceSamplingExecutor ex({2, 3, 4, 5, 1, 6}, 9, 32);
  GenerateOptions opt;
  opt.sampling.temperature = 0.7f;
  opt.sampling.seed = 77;
  const Outcome r = run(ex, {0, 6, 6}, opt);
  EXPECT_EQ(r.text, "Hello World");
  EXPECT_EQ(r.stats.generated_tokens, 4);
  ASSERT_EQ(ex.calls.size(), 5u);
  EXPECT_EQ(ex.seeds, std::vector<uint64_t>(5, 77));
}

TEST(Generate, ExtraStopIdsEndGenerationToo) {
  ScriptedExecutor ex({2, 3, 6, 4}, 9, 32);
  GenerateOptions opt;
  opt.stop_ids = {6};
  const Outcome r = run(ex, {0}, opt);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.stats.stop_reason, "eos");
  EXPECT_EQ(r.stats.generated_tokens, 2);
}

TEST(Generate, IgnoreEosRunsPastTheTokenizersStopIdsButNotExtraOnes) {
  ScriptedExecutor ex({2, 1, 3, 6, 4}, 9, 32);
  GenerateOptions opt;
  opt.ignore_eos = true;
  opt.stop_ids = {6};
  const Outcome r = run(ex, {0}, opt);
  EXPECT_EQ(r.stats.stop_reason, "eos");
  EXPECT_EQ(r.stats.generated_tokens, 3);  // 2, EOS (1) and 3; then the extra stop id
}

TEST(Generate, StopStringSplitAcrossTokensIsHeldBackAndCut) {
  ScriptedExecutor ex({2, 3, 4, 5, 6, 6}, 9, 32);
  GenerateOptions opt;
  opt.stop_strings = {"lo Wo"};
  const Outcome r = run(ex, {0}, opt);
  EXPECT_EQ(r.text, "Hel");
  // "l" and then "lo" could start the stop string, so each waited for the next token.
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"He", "l"}));
  EXPECT_EQ(r.stats.stop_reason, "stop_string");
  EXPECT_EQ(r.stats.generated_tokens, 3);
  EXPECT_EQ(ex.calls.size(), 3u);  // the token completing the stop is never fed
}

TEST(Generate, HeldBackTextIsReleasedWhenGenerationEndsOtherwise) {
  ScriptedExecutor ex({2, 3, 4, 1}, 9, 32);
  GenerateOptions opt;
  opt.stop_strings = {" World"};
  const Outcome r = run(ex, {0}, opt);
  EXPECT_EQ(r.text, "Hello Wor");
  EXPECT_EQ(r.stats.stop_reason, "eos");
}

TEST(Generate, StopsAtMaxNewTokensWithoutAnExtraForward) {
  ScriptedExecutor ex({2, 3, 4, 5}, 9, 32);
  GenerateOptions opt;
  opt.max_new_tokens = 2;
  const Outcome r = run(ex, {0}, opt);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.stats.stop_reason, "length");
  EXPECT_EQ(r.stats.generated_tokens, 2);
  EXPECT_EQ(ex.calls.size(), 2u);

  ScriptedExecutor none({2}, 9, 32);
  opt.max_new_tokens = 0;
  const Outcome z = run(none, {0}, opt);
  EXPECT_EQ(z.text, "");
  EXPECT_EQ(z.stats.generated_tokens, 0);
  EXPECT_EQ(z.stats.stop_reason, "length");
}

TEST(Generate, StopsWhenTheContextIsFull) {
  // Context 4, prompt 2: positions 2 and 3 take two fed tokens; the third
  // sampled token (from position 3's logits) is still emitted.
  ScriptedExecutor ex({2, 3, 4, 5, 6}, 9, 4);
  const Outcome r = run(ex, {0, 6}, {});
  EXPECT_EQ(r.text, "Hello Wor");
  EXPECT_EQ(r.stats.stop_reason, "context");
  EXPECT_EQ(r.stats.generated_tokens, 3);
  ASSERT_EQ(ex.calls.size(), 3u);
  EXPECT_EQ(ex.calls.back().pos, 3);
}

TEST(Generate, EmitsOnlyCompleteUtf8) {
  ScriptedExecutor ex({7, 8, 1}, 9, 32);
  const Outcome r = run(ex, {0}, {});
  EXPECT_EQ(r.text, "\xE2\x82\xAC");
  ASSERT_EQ(r.chunks.size(), 1u);  // the first half-character is never sent alone
}

TEST(Generate, DecodesTheFirstTokenInTheContextOfThePromptWithoutPrintingIt) {
  ScriptedExecutor after_bos({4, 5, 1}, 9, 32);
  EXPECT_EQ(run(after_bos, {0}, {}).text, "World");
  ScriptedExecutor after_text({4, 5, 1}, 9, 32);
  EXPECT_EQ(run(after_text, {0, 2}, {}).text, " World");
}

TEST(Generate, RejectsEmptyOrOversizedPrompts) {
  ScriptedExecutor ex({2}, 9, 4);
  EXPECT_THROW(run(ex, {}, {}), Error);
  EXPECT_THROW(run(ex, {0, 2, 3, 4, 5}, {}), Error);
  GenerateOptions opt;
  opt.max_new_tokens = -1;
  EXPECT_THROW(run(ex, {0}, opt), Error);
}

}  // namespace
}  // namespace fsvd
