// `flashsvd convert` on an encoder directory: written back as an encoder
// directory, its matrices as --dtype, that `embed` reads like the source.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "families/family_test_util.h"
#include "testing/cli_run.h"
#include "testing/encoder_files.h"
#include "testing/encoder_test_data.h"
#include "testing/files.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using testing::run_cli;

class ConvertEncoder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("config.json", testing::bert_config_json(dense_.config).dump());
    dir_.write("model.safetensors", test::build_safetensors(testing::encoder_hf_tensors(dense_, "")));
    dir_.write("vocab.txt", testing::small_vocab_txt(dense_.config.vocab));
  }
  std::vector<float> embed(const std::string& model) {
    const testing::CliResult r = run_cli("embed -t 1 --json -m " + model + " -p 'w5 w6 w7 w9'");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["embeddings"][0].get<std::vector<float>>();
  }

  EncoderModel dense_ = testing::random_encoder(testing::small_encoder_config(), 5);
  test::TempDir dir_{"convert_encoder"}, out_{"convert_encoder_out"};
};

TEST_F(ConvertEncoder, Fp32IsExactAndBf16Close) {
  const std::vector<float> want = embed(dir_.path());
  const testing::CliResult f32 = run_cli("convert -m " + dir_.path() + " -o " + out_.file("f32"));
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.err.find("bert encoder"), std::string::npos) << f32.err;
  EXPECT_EQ(embed(out_.file("f32")), want);

  const testing::CliResult bf16 = run_cli("convert --dtype bf16 " + dir_.path() + " -o " + out_.file("bf16"));
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_NE(bf16.err.find("matrices as BF16"), std::string::npos) << bf16.err;
  const std::vector<float> got = embed(out_.file("bf16"));
  ASSERT_EQ(got.size(), want.size());
  double dot = 0, gg = 0, ww = 0;
  for (size_t i = 0; i < got.size(); ++i) dot += got[i] * want[i], gg += got[i] * got[i], ww += want[i] * want[i];
  EXPECT_GT(dot / std::sqrt(gg * ww), 0.999);
  EXPECT_NE(got, want);  // stored rounded, not as fp32
}

TEST_F(ConvertEncoder, KeepsTheCompressionRecordAndRefusesATokenizer) {
  dir_.write("flashsvd_compression.json", R"({"method": "whiten", "ratio": 0.5})");
  const testing::CliResult r = run_cli("convert --dtype f16 -m " + dir_.path() + " -o " + out_.file("c"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(test::read_file(out_.file("c") + "/flashsvd_compression.json"))["method"], "whiten");

  const testing::CliResult tok =
      run_cli("convert -m " + dir_.path() + " -o " + out_.file("t") + " --tokenizer " + dir_.file("vocab.txt"));
  EXPECT_NE(tok.exit_code, 0);
  EXPECT_NE(tok.err.find("--tokenizer: does not apply to encoders"), std::string::npos) << tok.err;

  dir_.write("flashsvd_compression.json", "{not json");
  const testing::CliResult bad = run_cli("convert -m " + dir_.path() + " -o " + out_.file("b"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("flashsvd_compression.json: not valid JSON"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fsvd
