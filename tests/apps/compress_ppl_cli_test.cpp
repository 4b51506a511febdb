// `flashsvd compress` and `flashsvd ppl` as a user runs them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/cli_run.h"
#include "testing/data_paths.h"
#include "testing/files.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

class CompressPplCli : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::shared_data("models/stories260K/stories260K.bin");
    tok_ = testing::shared_data("models/stories260K/tok512.bin");
    text_ = testing::shared_data("text/tinystories_val_head.txt");
    if (model_.empty() || tok_.empty() || text_.empty()) GTEST_SKIP() << "stories260K or TinyStories text not found";
    out_ = test::unique_temp_path("flashsvd_compress_cli");
  }
  void TearDown() override {
    if (!out_.empty()) fs::remove_all(out_);
  }
  std::string model_, tok_, text_;
  fs::path out_;
};

TEST_F(CompressPplCli, PplPrintsALineOrJson) {
  const std::string base = "ppl -m " + model_ + " --tokenizer " + tok_ + " --text " + text_ + " --ctx 256 --max-windows 4";
  const testing::CliResult line = run_cli(base + " --device cpu");
  ASSERT_EQ(line.exit_code, 0) << line.err;
  EXPECT_EQ(line.out.rfind("perplexity ", 0), 0u) << line.out;
  EXPECT_NE(line.out.find("over 4 windows of 256 tokens (1020 predictions)"), std::string::npos) << line.out;

  const testing::CliResult json = run_cli(base + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["windows"], 4);
  EXPECT_EQ(j["predictions"], 4 * 255);
  EXPECT_EQ(j["ctx"], 256);
  const double ppl = j["perplexity"];
  EXPECT_GT(ppl, 2.0);  // stories260K on TinyStories: about 3.7 (shared/data README)
  EXPECT_LT(ppl, 6.0);
  EXPECT_NEAR(std::exp(j["nll"].get<double>()), ppl, 1e-9 * ppl);
}

// --kv-dtype fp8 reaches the backend: the perplexity moves, a little.
TEST_F(CompressPplCli, PplWithAnFp8KvCache) {
  const std::string base =
      "ppl -m " + model_ + " --tokenizer " + tok_ + " --text " + text_ + " --ctx 256 --max-windows 4 --device cpu --json";
  const testing::CliResult fp32 = run_cli(base), fp8 = run_cli(base + " --kv-dtype fp8");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  ASSERT_EQ(fp8.exit_code, 0) << fp8.err;
  const double nll = nlohmann::json::parse(fp32.out)["nll"], nll8 = nlohmann::json::parse(fp8.out)["nll"];
  EXPECT_NE(nll8, nll);
  EXPECT_NEAR(nll8, nll, 0.05 * nll);
  const testing::CliResult bad = run_cli(base + " --kv-dtype fp16");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--kv-dtype"), std::string::npos) << bad.err;
}

// The CPU runtime with its KV cache decodes exactly what the cache-free
// fp32 reference decodes.
TEST_F(CompressPplCli, FidelityOfTheCpuRuntimeIsExact) {
  const fs::path prompts = test::unique_temp_path("flashsvd_prompts");
  std::ofstream(prompts) << "Once upon a time\n\nThe little dog\n";
  const testing::CliResult r =
      run_cli("fidelity -m " + model_ + " --tokenizer " + tok_ + " --prompts " + prompts.string() + " -n 8 --device cpu --json");
  fs::remove(prompts);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompts"].size(), 2u);
  EXPECT_EQ(j["exact_rate"].get<double>(), 1.0);
  EXPECT_LT(j["max_logit_error"].get<double>(), 1e-5);
  EXPECT_NE(run_cli("fidelity -m " + model_ + " --tokenizer " + tok_ + " --prompts /nonexistent").exit_code, 0);
}

TEST_F(CompressPplCli, PplErrorsAreClear) {
  EXPECT_NE(run_cli("ppl -m " + model_ + " --tokenizer " + tok_).exit_code, 0);  // --text is required
  const testing::CliResult missing = run_cli("ppl -m " + model_ + " --tokenizer " + tok_ + " --text /nonexistent.txt");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent.txt"), std::string::npos) << missing.err;
  const fs::path tiny = test::unique_temp_path("flashsvd_ppl_tiny") + ".txt";
  { std::ofstream(tiny) << "Once upon a time"; }
  const testing::CliResult short_text =
      run_cli("ppl -m " + model_ + " --tokenizer " + tok_ + " --text " + tiny.string() + " --ctx 64");
  fs::remove(tiny);
  EXPECT_EQ(short_text.exit_code, 1);
  EXPECT_NE(short_text.err.find("fewer than one window"), std::string::npos) << short_text.err;
}

TEST_F(CompressPplCli, CompressWritesAModelThatInfoAndPplRead) {
  const testing::CliResult c = run_cli("compress -m " + model_ + " --tokenizer " + tok_ + " --ratio 0.6 --calib " +
                                       text_ + " --calib-tokens 4096 -t 1 -o " + out_.string());
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(c.out.empty()) << c.out;  // progress goes to stderr
  EXPECT_NE(c.err.find("calibrating layers 0..4 on 4096 tokens"), std::string::npos) << c.err;
  // --ratio 0.6 of the whole model: the matrices keep 54% (the embedding stays whole).
  EXPECT_NE(c.err.find("layer 5/5: ranks q 17 k 11 v 11 o 17 gate 25 up 25 down 25"), std::string::npos) << c.err;

  const testing::CliResult info = run_cli("info --json -m " + out_.string());
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json j = nlohmann::json::parse(info.out);
  int low_rank = 0;
  for (const auto& l : j["linears"]) low_rank += l["rank"].get<int>() > 0;
  EXPECT_EQ(low_rank, 5 * 7);  // lm_head stays dense

  // The tokenizer travels with the compressed model.
  const testing::CliResult ppl =
      run_cli("ppl --json -m " + out_.string() + " --text " + text_ + " --ctx 256 --max-windows 4");
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_GT(nlohmann::json::parse(ppl.out)["perplexity"].get<double>(), 2.0);

  // An existing model is replaced only with --force.
  const std::string again = "compress -m " + model_ + " --ratio 0.8 --method svd -t 1 -o " + out_.string();
  const testing::CliResult refused = run_cli(again);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(run_cli(again + " --force").exit_code, 0);
}

TEST_F(CompressPplCli, CompressReusesCalibrationStatistics) {
  const std::string stats = out_.string() + "_stats";
  const std::string base = "compress -m " + model_ + " --tokenizer " + tok_ + " --calib " + text_ +
                           " --calib-tokens 1024 -t 1 --stats " + stats + " --force";
  const testing::CliResult first = run_cli(base + " --ratio 0.6 -o " + out_.string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("wrote calibration statistics to " + stats), std::string::npos) << first.err;
  const testing::CliResult second = run_cli(base + " --ratio 0.8 --allocation loss -o " + out_.string());
  fs::remove(stats);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("calibration statistics from " + stats), std::string::npos) << second.err;
  EXPECT_EQ(second.err.find("calibrating"), std::string::npos) << second.err;
}

TEST_F(CompressPplCli, CompressRejectsBadSettings) {
  const std::string base = "compress -m " + model_ + " --tokenizer " + tok_ + " -o " + out_.string();
  const testing::CliResult ratio = run_cli(base + " --ratio 1.5 --method svd");
  EXPECT_EQ(ratio.exit_code, 1);
  EXPECT_NE(ratio.err.find("--ratio"), std::string::npos) << ratio.err;
  const testing::CliResult calib = run_cli(base + " --ratio 0.5");
  EXPECT_EQ(calib.exit_code, 1);
  EXPECT_NE(calib.err.find("--calib"), std::string::npos) << calib.err;
  EXPECT_NE(run_cli(base + " --ratio 0.5 --method magic").exit_code, 0);
  const testing::CliResult stats = run_cli(base + " --ratio 0.5 --method svd --stats " + out_.string() + "_stats");
  EXPECT_EQ(stats.exit_code, 1);
  EXPECT_NE(stats.err.find("--stats"), std::string::npos) << stats.err;
  const testing::CliResult residual = run_cli(base + " --ratio 0.5 --calib " + text_ + " --refit-residual");
  EXPECT_EQ(residual.exit_code, 1);
  EXPECT_NE(residual.err.find("residual re-fit needs sequential"), std::string::npos) << residual.err;
  for (const char* gpu_flag : {"--device cuda", "--precision fp32"})  // calibration is CPU-only
    EXPECT_NE(run_cli(base + " --ratio 0.5 --method svd " + gpu_flag).exit_code, 0) << gpu_flag;
  EXPECT_FALSE(fs::exists(out_));
}

}  // namespace
}  // namespace fsvd
