// `flashsvd embed` and `flashsvd info` on an encoder, as a user runs them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/cli_run.h"
#include "testing/data_paths.h"
#include "testing/files.h"

namespace fsvd {
namespace {

using testing::run_cli;

// The encoder bench (Table 5's columns) on the CPU: one JSON row per (batch,
// seq), the token count of fixed or spread lengths.
TEST(EncoderBenchCli, ReportsLatencyThroughputAndTokens) {
  testing::CliResult r =
      run_cli("bench --synthetic minilm-l6 --ratio 0.5 --device cpu -t 1 --batch 2,3 --seq 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["batch"], 3);
  EXPECT_EQ(rows[1]["tokens"], 60);
  EXPECT_GT(rows[1]["latency_ms"].get<double>(), 0);
  EXPECT_GT(rows[1]["sequences_per_s"].get<double>(), 0);
  r = run_cli("bench --synthetic minilm-l6 --ratio 0.5 --device cpu -t 1 --batch 4 --seq 40 --varlen --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t tokens = nlohmann::json::parse(r.out)[0]["tokens"].get<int64_t>();
  EXPECT_GE(tokens, 4 * 16);
  EXPECT_LT(tokens, 4 * 40);
  // Lengths drawn afresh for every pass: the mean pass's tokens, in the same range.
  r = run_cli("bench --synthetic minilm-l6 --ratio 0.5 --device cpu -t 1 --batch 4 --seq 40 --new-shapes --repeat 3 "
              "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json fresh = nlohmann::json::parse(r.out)[0];
  EXPECT_TRUE(fresh["new_shapes"].get<bool>());
  EXPECT_GE(fresh["tokens"].get<int64_t>(), 4 * 16);
  EXPECT_LT(fresh["tokens"].get<int64_t>(), 4 * 40);
  r = run_cli("bench --synthetic minilm-l6 --device cpu --seq 600");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--seq"), std::string::npos) << r.err;
  r = run_cli("bench --synthetic minilm-l6 --device cpu --seq 20 --kv-dtype fp8");  // an encoder has no KV cache
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--kv-dtype"), std::string::npos) << r.err;
}

TEST(EmbedCli, BadFlagCombinationsAreRejected) {
  testing::CliResult r = run_cli("embed -m /nonexistent -p a --input b");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("exactly one of -p TEXT or --input FILE"), std::string::npos) << r.err;
  r = run_cli("embed -m /nonexistent -p a -o x.npy --json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("at most one of"), std::string::npos) << r.err;
  r = run_cli("embed -m /nonexistent -p a");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << r.err;
}

class EmbedMiniLm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::minilm_dir();
    if (dir_.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 not cached (run `flashsvd pull --encoder`)";
  }
  std::string dir_;
};

// One embedding per line, in order: the JSON rows are unit vectors, and the
// .npy holds the same numbers.
TEST_F(EmbedMiniLm, JsonAndNpyOutputs) {
  const std::string input = test::unique_temp_path("embed_in") + ".txt";
  const std::string npy = test::unique_temp_path("embed_out") + ".npy";
  std::ofstream(input) << "A man is playing a guitar.\nSomeone plays music.\n\nThe stock market fell.\n";
  const testing::CliResult j = run_cli("embed -t 1 --batch 3 -m " + dir_ + " --input " + input + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.err.find("embedded 4/4 in "), std::string::npos) << j.err;
  EXPECT_NE(j.err.find(" inputs/s)"), std::string::npos) << j.err;
  const nlohmann::json out = nlohmann::json::parse(j.out);
  EXPECT_EQ(out["dim"], 384);
  ASSERT_EQ(out["embeddings"].size(), 4u);
  for (const nlohmann::json& e : out["embeddings"]) {
    double norm = 0;
    for (float x : e.get<std::vector<float>>()) norm += double{x} * x;
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  const testing::CliResult n = run_cli("embed -t 1 -m " + dir_ + " --input " + input + " -o " + npy);
  ASSERT_EQ(n.exit_code, 0) << n.err;
  const std::string bytes = test::read_file(npy);
  ASSERT_GT(bytes.size(), 4u * 384 * 4);
  EXPECT_NE(bytes.find("'shape': (4,384,)"), std::string::npos);
  float last;
  std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
  EXPECT_FLOAT_EQ(last, out["embeddings"][3][383].get<float>());
  std::remove(input.c_str());
  std::remove(npy.c_str());
}

TEST_F(EmbedMiniLm, InfoDescribesTheEncoder) {
  const testing::CliResult r = run_cli("info -m " + dir_ + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["arch"], "bert");
  EXPECT_EQ(j["config"]["layers"], 6);
  EXPECT_EQ(j["pooling"], "mean");
  EXPECT_EQ(j["normalize"], true);
  EXPECT_EQ(j["max_tokens"], 256);
  EXPECT_EQ(j["linears"].size(), 36u);
  EXPECT_EQ(j["params"], 22565376);  // the safetensors minus the unused pooler
}

}  // namespace
}  // namespace fsvd
