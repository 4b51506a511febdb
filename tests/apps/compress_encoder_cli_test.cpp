// `flashsvd compress` on an encoder directory, then the compressed encoder
// through `embed` and `info`, as a user runs them; and the refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_encoder.h"
#include "families/encoder_family.h"
#include "families/family_test_util.h"
#include "testing/cli_run.h"
#include "testing/encoder_files.h"
#include "testing/encoder_test_data.h"
#include "testing/files.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using testing::run_cli;

class CompressEncoderCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("config.json", testing::bert_config_json(dense_.config).dump());
    dir_.write("model.safetensors", test::build_safetensors(testing::encoder_hf_tensors(dense_, "")));
    dir_.write("vocab.txt", testing::small_vocab_txt(dense_.config.vocab));
    std::string calib;
    for (int i = 0; i < 40; ++i) calib += "w" + std::to_string(5 + i % 40) + " w" + std::to_string(5 + (i * 7) % 40) + " w9\n\n";
    dir_.write("calib.txt", calib);
    dir_.write("empty.txt", "\n \n");
  }
  std::string run(const std::string& args) { return "compress -t 1 -m " + dir_.path() + " " + args; }

  EncoderModel dense_ = testing::random_encoder(testing::small_encoder_config(), 8);
  test::TempDir dir_{"compress_encoder_cli"}, out_{"compress_encoder_cli_out"};
};

TEST_F(CompressEncoderCli, WritesAnEncoderThatEmbedAndInfoRead) {
  const std::string out = out_.file("w");
  const testing::CliResult r =
      run_cli(run("--ratio 0.8 -o " + out + " --calib " + dir_.file("calib.txt") + " --calib-tokens 60"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("calibrating layers 0..1 on"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("layer 2/2: ranks q 6 k 6 v 6 o 6 up 8 down 8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote " + out), std::string::npos) << r.err;

  const nlohmann::json p = nlohmann::json::parse(test::read_file(out + "/flashsvd_compression.json"));
  EXPECT_EQ(p["method"], "whiten");
  EXPECT_GE(p["calibration"]["tokens"].get<int>(), 60);
  EXPECT_EQ(p["calibration"]["file"], dir_.file("calib.txt"));

  const testing::CliResult info = run_cli("info --json -m " + out);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["linears"][0]["rank"], 6);
  EXPECT_EQ(j["linears"][5]["rank"], 8);

  // embed on the compressed directory = the CPU encoder on the compressed model.
  const testing::CliResult e = run_cli("embed -t 1 --json -m " + out + " -p 'w5 w6 w7'");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::vector<float> got = nlohmann::json::parse(e.out)["embeddings"][0].get<std::vector<float>>();
  const EncoderModel m = load_encoder(out);
  const std::vector<EncoderInput> in = {{{2, 5, 6, 7, 3}, {0, 0, 0, 0, 0}}};
  const std::vector<float> want = CpuEncoder(m, 1).embed(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);

  const testing::CliResult svd = run_cli(run("--ratio 0.5 --method svd -o " + out_.file("s")));
  ASSERT_EQ(svd.exit_code, 0) << svd.err;
  EXPECT_EQ(load_encoder(out_.file("s")).layers[0].q.rank(), 3);  // int(16·16·0.457/32)
}

TEST_F(CompressEncoderCli, ClearErrors) {
  const std::string calib = " --calib " + dir_.file("calib.txt");
  auto fails = [&](const std::string& args, const std::string& needle) {
    const testing::CliResult r = run_cli(run(args));
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
  };
  fails("--ratio 0.5 -o " + out_.file("a"), "whitening needs a calibration text");
  fails("--ratio 1.2 -o " + out_.file("a") + calib, "(0, 1)");
  fails("--ratio 0.5 -o " + out_.file("a") + " --calib " + dir_.file("empty.txt"), "has no non-empty line");
  fails("--ratio 0.5 -o " + out_.file("a") + " --calib /nonexistent.txt", "/nonexistent.txt");
  fails("--ratio 0.5 -o " + out_.file("a") + calib + " --allocation budget", "--allocation: does not apply to encoders");
  fails("--ratio 0.5 -o " + out_.file("a") + calib + " --sequential", "--sequential: does not apply to encoders");
  fails("--ratio 0.5 -o " + out_.file("a") + calib + " --refit-residual", "--refit-residual: does not apply to encoders");
  fails("--ratio 0.5 -o " + out_.file("a") + calib + " --stats s.bin", "--stats: does not apply to encoders");
  fails("--ratio 0.5 -o " + out_.file("a") + calib + " --dtype bf16", "--dtype: does not apply to encoders");
  fails("--ratio 0.5 -o " + dir_.path() + calib, "is the input");
  std::filesystem::create_directories(out_.file("b"));
  out_.write("b/x", "x");
  fails("--ratio 0.5 -o " + out_.file("b") + calib, "is not empty; pass --force");
  EXPECT_FALSE(std::filesystem::exists(out_.file("a")));
}

}  // namespace
}  // namespace fsvd
