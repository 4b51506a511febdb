// `flashsvd batch` as a user runs it: every request's text equals `flashsvd
// generate` on the same prompt and parameters, results in input order, bad
// lines answered with an error and the rest served.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_run.h"
#include "testing/data_paths.h"
#include "testing/files.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::run_cli;

struct Line {
  std::string prompt;  // shell-safe: no single quotes
  int max_tokens;
  std::string extra_json, extra_flags;  // the same parameters for batch and generate
};

std::vector<json> run_batch(const std::string& model_flags, const std::vector<std::string>& lines,
                            const std::string& batch_flags, std::string* err) {
  const std::string in = test::unique_temp_path("flashsvd_batch_in") + ".jsonl";
  const std::string out = test::unique_temp_path("flashsvd_batch_out") + ".jsonl";
  std::ofstream f(in);
  for (const std::string& l : lines) f << l << "\n";
  f.close();
  const testing::CliResult r = run_cli("batch " + model_flags + " --input " + in + " -o " + out + " " + batch_flags);
  *err = r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> results;
  std::istringstream text(test::read_file(out));
  for (std::string l; std::getline(text, l);) results.push_back(json::parse(l));
  fs::remove(in);
  fs::remove(out);
  return results;
}

std::string generate_text(const std::string& model_flags, const Line& l, const std::string& mode) {
  const testing::CliResult r =
      run_cli("generate " + model_flags + " " + mode + " -p '" + l.prompt + "' -n " + std::to_string(l.max_tokens) +
              " " + l.extra_flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.empty() ? r.out : r.out.substr(0, r.out.size() - 1);  // generate ends with a newline
}

TEST(BatchCli, Stories260KMatchesGenerateThroughQueueingAndPreemption) {
  const std::string model = testing::shared_data("models/stories260K/stories260K.bin");
  const std::string tok = testing::shared_data("models/stories260K/tok512.bin");
  if (model.empty() || tok.empty()) GTEST_SKIP() << "stories260K not found";
  const std::string flags = "--device cpu -m " + model + " --tokenizer " + tok;
  const std::vector<Line> good = {
      {"Once upon a time", 40, "", ""},
      {"", 60, "", ""},
      {"The dog ran", 25, R"(, "temperature": 0.8, "seed": 11)", "--temp 0.8 --seed 11"},
      {"Lily and Ben went to the park", 50, R"(, "stop": ".")", "--stop ."},
      {"One day", 1, "", ""},
      {"Tom had a big red ball and", 45, R"(, "temperature": 1.1, "top_k": 20, "top_p": 0.9, "seed": 4)",
       "--temp 1.1 --top-k 20 --top-p 0.9 --seed 4"},
      {"The sun", 0, "", ""},
      {"A little bird", 55, R"(, "stop": ["bird", "tree"])", "--stop bird --stop tree"},
      {"She was happy", 35, "", ""},
      {"Max", 50, R"(, "temperature": 0.5, "seed": 99)", "--temp 0.5 --seed 99"},
  };
  std::vector<std::string> lines;
  std::vector<int> good_at;  // line index of each good request
  const std::vector<std::string> bad = {"{oops", R"({"prompt": "x", "max_tokens": -4})", R"({"prompt": "x", "logprobs": true})"};
  for (size_t i = 0; i < good.size(); ++i) {
    if (i % 4 == 1) lines.push_back(bad[i / 4]);
    good_at.push_back(static_cast<int>(lines.size()));
    lines.push_back(R"({"id": )" + std::to_string(i) + R"(, "prompt": ")" + good[i].prompt + R"(", "max_tokens": )" +
                    std::to_string(good[i].max_tokens) + good[i].extra_json + "}");
  }
  std::string err;
  // Four sequences of up to ~70 positions share 128: the cache fills, sequences queue and get preempted.
  const std::vector<json> results =
      run_batch(flags, lines, "--max-batch 4 --step-tokens 8 --ctx 96 --kv-tokens 128", &err);
  ASSERT_EQ(results.size(), lines.size()) << err;
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i]["index"], i);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(results[1 + 5 * i].contains("error")) << results[1 + 5 * i];
  for (size_t i = 0; i < good.size(); ++i) {
    const json& r = results[good_at[i]];
    ASSERT_FALSE(r.contains("error")) << r;
    EXPECT_EQ(r["id"], i);
    EXPECT_EQ(r["text"], generate_text(flags, good[i], "")) << "request " << i << ": " << good[i].prompt;
  }
  EXPECT_EQ(results[good_at[6]]["completion_tokens"], 0);
  EXPECT_NE(err.find("3 failed"), std::string::npos) << err;
  EXPECT_EQ(err.find(" 0 preemptions"), std::string::npos) << "the small cache should have forced preemptions: " << err;
}

TEST(BatchCli, DefaultModelChatMatchesGenerate) {
  const std::string gguf = testing::smollm2_gguf();
  if (gguf.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (run `flashsvd pull` or set FLASHSVD_SMOLLM2_GGUF)";
  const std::string flags = "--device cpu -m " + gguf;
  const std::vector<Line> good = {
      {"What is the capital of France?", 16, "", ""},
      {"Write a haiku about the sea.", 24, "", ""},
      {"List three colors.", 20, "", ""},
      {"Hi", 12, "", ""},
      {"Explain gravity to a child in one sentence.", 24, "", ""},
  };
  std::vector<std::string> lines;
  for (const Line& l : good)
    lines.push_back(R"({"messages": [{"role": "user", "content": ")" + l.prompt + R"("}], "max_tokens": )" +
                    std::to_string(l.max_tokens) + "}");
  std::string err;
  const std::vector<json> results = run_batch(flags, lines, "--max-batch 3 --step-tokens 16", &err);
  ASSERT_EQ(results.size(), good.size()) << err;
  for (size_t i = 0; i < good.size(); ++i)
    EXPECT_EQ(results[i]["text"], generate_text(flags, good[i], "--chat")) << good[i].prompt;
}

// bench --batch: sequence 0 (the same prompt as the one-sequence bench)
// decodes the same greedy tokens however many sequences share its steps.
TEST(BatchCli, BenchBatchDecodesWhatTheOneSequenceBenchDoes) {
  const std::string model = testing::shared_data("models/stories260K/stories260K.bin");
  if (model.empty()) GTEST_SKIP() << "stories260K not found";
  const std::string flags = "bench --device cpu -m " + model + " --prompt 40 --gen 12 --json";
  const testing::CliResult one = run_cli(flags);
  const testing::CliResult many = run_cli(flags + " --batch 1,3,5");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(many.exit_code, 0) << many.err;
  const json want = json::parse(one.out)[0]["tokens"];
  const json rows = json::parse(many.out);
  ASSERT_EQ(rows.size(), 3u);
  const int batches[] = {1, 3, 5};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["batch"], batches[i]);
    EXPECT_GT(rows[i]["decode_tokens_per_s"].get<double>(), 0);
    const json& got = rows[i]["tokens"];
    ASSERT_EQ(got.size(), 12u);
    for (size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], want[t]) << "batch " << rows[i]["batch"] << " token " << t;
  }
}

TEST(BatchCli, UnreadableInputIsAClearError) {
  const testing::CliResult r = run_cli("batch -m x --input /nonexistent/requests.jsonl");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/requests.jsonl"), std::string::npos) << r.err;
  EXPECT_NE(run_cli("batch -m x --max-batch 0").exit_code, 0);
}

}  // namespace
}  // namespace fsvd
