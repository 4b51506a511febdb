// The flashsvd binary as a user runs it: output streams, exit codes, and
// clear errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
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

using test::read_file;
using testing::run_cli;

std::string stories(const char* file) { return testing::shared_data(std::string("models/stories260K/") + file); }

TEST(Cli, UnknownFlagIsRejected) {
  const testing::CliResult r = run_cli("generate --no-such-flag");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no-such-flag"), std::string::npos) << r.err;
}

TEST(Cli, NonsenseValuesAreRejected) {
  EXPECT_NE(run_cli("generate -n -5 -m x").exit_code, 0);
  EXPECT_NE(run_cli("generate --top-p 7 -m x").exit_code, 0);
  EXPECT_NE(run_cli("generate --device gpu -m x").exit_code, 0);
  const testing::CliResult r = run_cli("logits -m x --tokens 1,two,3");
  EXPECT_NE(r.exit_code, 0);
}

TEST(Cli, MissingModelFileIsNamed) {
  const testing::CliResult r = run_cli("info -m /nonexistent/model.gguf");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;
}

TEST(Cli, TruncatedModelIsAClearError) {
  const std::string model = stories("stories260K.bin");
  if (model.empty()) GTEST_SKIP() << "stories260K not found";
  const fs::path cut = test::unique_temp_path("flashsvd_truncated_stories") + ".bin";
  const std::string bytes = read_file(model);
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  const testing::CliResult r = run_cli("info -m " + cut.string() + " --family llama2c");
  fs::remove(cut);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(cut.string()), std::string::npos) << r.err;
}

TEST(Cli, GenerateStreamsUpstreamGreedyText) {
  const std::string model = stories("stories260K.bin"), tok = stories("tok512.bin");
  if (model.empty() || tok.empty()) GTEST_SKIP() << "stories260K not found";
  const testing::CliResult r = run_cli("generate -m " + model + " --tokenizer " + tok + " -n 200");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string expected = read_file(stories("greedy_bos_256.txt"));
  ASSERT_FALSE(r.out.empty());
  const std::string text = r.out.substr(0, r.out.size() - 1);  // a final newline ends the stream
  EXPECT_EQ(text, expected.substr(0, text.size()));
  EXPECT_NE(r.err.find("decode: 200 tokens"), std::string::npos) << r.err;
}

TEST(Cli, InfoJsonDescribesEveryLinear) {
  const std::string model = stories("stories260K.bin");
  if (model.empty()) GTEST_SKIP() << "stories260K not found";
  const testing::CliResult r = run_cli("info --json -m " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["layers"], 5);
  EXPECT_EQ(j["config"]["kv_heads"], 4);
  EXPECT_EQ(j["linears"].size(), 5u * 7 + 1);
  EXPECT_EQ(j["linears"][0]["out"], 64);
  EXPECT_EQ(j["linears"][0]["rank"], -1);
}

TEST(Cli, LogitsWritesNpy) {
  const std::string model = stories("stories260K.bin");
  if (model.empty()) GTEST_SKIP() << "stories260K not found";
  const fs::path npy = test::unique_temp_path("flashsvd_cli_logits") + ".npy";
  const testing::CliResult r = run_cli("logits -m " + model + " --tokens 1,403,407 -o " + npy.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string bytes = read_file(npy.string());
  fs::remove(npy);
  ASSERT_GE(bytes.size(), 128u);
  EXPECT_EQ(bytes.substr(1, 5), "NUMPY");
  EXPECT_NE(bytes.find("'shape': (3,512,)"), std::string::npos);
  EXPECT_EQ(bytes.size() % 64, (3 * 512 * 4) % 64);
  EXPECT_EQ(bytes.size() - 3 * 512 * 4, 128u);  // header padded to 64 bytes
}

TEST(Cli, LogitsLastIsTheLastRow) {
  const std::string model = stories("stories260K.bin");
  if (model.empty()) GTEST_SKIP() << "stories260K not found";
  const testing::CliResult all = run_cli("logits --device cpu -m " + model + " --tokens 1,403,407");
  const testing::CliResult last = run_cli("logits --device cpu -m " + model + " --tokens 1,403,407 --last");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  ASSERT_EQ(last.exit_code, 0) << last.err;
  auto rows = [](const std::string& text) {
    std::vector<std::vector<double>> r;
    std::stringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      std::stringstream values(line);
      r.emplace_back();
      for (double v; values >> v;) r.back().push_back(v);
    }
    return r;
  };
  const auto a = rows(all.out), b = rows(last.out);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].size(), 1u + 512);
  EXPECT_EQ(b[0][0], 407);  // the row's token id, then its logits
  // The head runs as a GEMV instead of a GEMM row: the same sums up to rounding.
  for (size_t i = 1; i < b[0].size(); ++i) EXPECT_NEAR(b[0][i], a[2][i], 1e-4 * (1 + std::abs(a[2][i]))) << i;
}

}  // namespace
}  // namespace fsvd
