// The README's main job (scripts/demo.sh): the compressed default model's
// greedy continuation of the demo prompt, scored by the dense model, is within
// 2x of the dense model's own continuation in perplexity and does not loop.
// Compresses the default model with the demo's settings: minutes on 2 cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "backends/cpu/cpu_executor.h"
#include "eval/nll.h"
#include "families/load.h"
#include "testing/cli_run.h"
#include "testing/data_paths.h"
#include "testing/files.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = fs::path(FLASHSVD_TEST_FIXTURES).parent_path().parent_path();

// scripts/demo_settings.sh's key="value" lines.
std::map<std::string, std::string> demo_settings() {
  std::ifstream in(kRepo / "scripts/demo_settings.sh");
  std::map<std::string, std::string> out;
  const std::regex line(R"re(^(\w+)="(.*)"$)re");
  std::smatch m;
  for (std::string s; std::getline(in, s);)
    if (std::regex_match(s, m, line)) out[m[1]] = m[2];
  return out;
}

std::vector<int32_t> greedy(const Model& m, const Tokenizer& tok, std::vector<int32_t> ids, int n) {
  CpuExecutor ex(m, static_cast<int>(ids.size()) + n, 0);
  std::vector<float> logits;
  const size_t prompt = ids.size();
  ex.forward(ids, 0, false, logits);
  for (int i = 0; i < n; ++i) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (next == tok.eos_id()) break;
    ids.push_back(next);
    ex.forward({&ids.back(), 1}, static_cast<int>(ids.size()) - 1, false, logits);
  }
  return {ids.begin() + prompt, ids.end()};
}

// Perplexity of `continuation` after `prompt` under `scorer`.
double continuation_perplexity(const Model& scorer, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& continuation) {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), continuation.begin(), continuation.end());
  CpuExecutor ex(scorer, static_cast<int>(all.size()), 0);
  std::vector<float> logits;
  const std::span<const int32_t> s(all);
  const double with = window_nll_sum(ex, s.first(all.size() - 1), s.subspan(1), logits);
  const double without = window_nll_sum(ex, s.first(prompt.size() - 1), s.subspan(1, prompt.size() - 1), logits);
  return std::exp((with - without) / static_cast<double>(continuation.size()));
}

// The longest run of one word sequence repeated back to back in `text`
// ("written written written": 3; "a b a b": 2), words split at whitespace:
// what a decoding loop produces, unlike a list's repeated phrasing ("The
// first rule is to avoid ... The second rule is to avoid ...": 1).
int longest_back_to_back_repeat(const std::string& text) {
  std::vector<std::string> w;
  std::istringstream in(text);
  for (std::string word; in >> word;) w.push_back(word);
  int longest = w.empty() ? 0 : 1;
  for (size_t len = 1; 2 * len <= w.size(); ++len)
    for (size_t start = 0; start + 2 * len <= w.size(); ++start) {
      int times = 1;
      while (start + (times + 1) * len <= w.size() &&
             std::equal(w.begin() + start, w.begin() + start + len, w.begin() + start + times * len))
        ++times;
      longest = std::max(longest, times);
    }
  return longest;
}

TEST(DemoContinuation, BackToBackRepeatsAreLoopsAndListsAreNot) {
  EXPECT_EQ(longest_back_to_back_repeat(""), 0);
  EXPECT_EQ(longest_back_to_back_repeat("one sentence, no repeats."), 1);
  EXPECT_EQ(longest_back_to_back_repeat("it was written written written down"), 3);
  EXPECT_EQ(longest_back_to_back_repeat("go on and on and on and on"), 3);
  EXPECT_EQ(longest_back_to_back_repeat("x Be clear. Be clear. y"), 2);
  EXPECT_EQ(longest_back_to_back_repeat("The first rule is to avoid globals. The second rule is to avoid "
                                        "side effects. The third rule is to avoid long functions."),
            1);
}

// Compresses the default model with the demo's settings (a few minutes on 2
// cores) and compares the two greedy continuations of the demo prompt.
TEST(DemoContinuation, CompressedAnswerIsCloseToTheDenseOneAndDoesNotLoop) {
  const std::string gguf = testing::smollm2_gguf();
  if (gguf.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (run `flashsvd pull` or set FLASHSVD_SMOLLM2_GGUF)";
  const auto settings = demo_settings();
  ASSERT_EQ(settings.size(), 4u) << "scripts/demo_settings.sh";
  const fs::path out = fs::temp_directory_path() / "flashsvd_demo_continuation_test";
  fs::create_directories(out);
  const fs::path calibration = out / "calibration.txt";  // as scripts/demo.sh joins them
  std::ofstream(calibration) << test::read_file((kRepo / "scripts/demo_text/calibration.txt").string())
                             << test::read_file((kRepo / "scripts/demo_text/samples.txt").string());
  const testing::CliResult c = testing::run_cli(
      "compress -m " + gguf + " --ratio " + settings.at("demo_keep") + " " + settings.at("demo_compress_flags") +
      " --calib " + calibration.string() + " --dtype bf16 --force -o " + (out / "model").string());
  ASSERT_EQ(c.exit_code, 0) << c.err;

  const Model dense = load_model(gguf);
  const Model compressed = load_model((out / "model").string());
  const auto tok = load_tokenizer(gguf, "");
  const std::vector<int32_t> prompt = tok->encode(settings.at("demo_prompt"), tok->adds_bos());
  const int n = std::stoi(settings.at("demo_tokens"));
  const std::vector<int32_t> mine = greedy(dense, *tok, prompt, n), theirs = greedy(compressed, *tok, prompt, n);
  const double dense_ppl = continuation_perplexity(dense, prompt, mine);
  const double compressed_ppl = continuation_perplexity(dense, prompt, theirs);
  std::printf("dense continuation (perplexity %.2f under the dense model):%s\n", dense_ppl, tok->decode(mine).c_str());
  std::printf("compressed continuation (perplexity %.2f under the dense model):%s\n", compressed_ppl,
              tok->decode(theirs).c_str());
  ASSERT_GE(theirs.size(), 8u);
  EXPECT_LE(compressed_ppl, 2.0 * dense_ppl);
  // No loop: nothing repeated back to back more than twice, or than the dense answer does.
  const int dense_repeat = longest_back_to_back_repeat(tok->decode(mine));
  EXPECT_LE(longest_back_to_back_repeat(tok->decode(theirs)), std::max(2, dense_repeat));
  fs::remove_all(out);
}

}  // namespace
}  // namespace fsvd
