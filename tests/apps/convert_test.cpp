// `flashsvd convert` as a user runs it: the converted directory generates,
// scores and describes itself exactly as the source did.
#include <gtest/gtest.h>

#include <filesystem>

#include "families/family_test_util.h"
#include "families/native_family.h"
#include "testing/cli_run.h"
#include "testing/data_paths.h"
#include "testing/random_model.h"
#include "testing/files.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

using test::read_file;

std::string stories(const char* file) { return testing::shared_data(std::string("models/stories260K/") + file); }

class ConvertStories : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = stories("stories260K.bin");
    tok_ = stories("tok512.bin");
    if (model_.empty() || tok_.empty()) GTEST_SKIP() << "stories260K not found";
  }
  std::string model_, tok_;
  test::TempDir dir_{"convert_cli"};
};

TEST_F(ConvertStories, ConvertedModelGeneratesAndScoresIdentically) {
  const std::string out = dir_.file("native");
  const auto r = run_cli("convert " + model_ + " -o " + out + " --tokenizer " + tok_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + out), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokenizer: tokenizer.bin"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out + "/model.safetensors") && fs::exists(out + "/flashsvd.json"));

  // No --tokenizer needed any more; the greedy text is upstream's.
  const auto gen = run_cli("generate -m " + out + " -n 200 --device cpu");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const std::string expected = read_file(stories("greedy_bos_256.txt"));
  ASSERT_FALSE(gen.out.empty());
  const std::string text = gen.out.substr(0, gen.out.size() - 1);
  EXPECT_EQ(text, expected.substr(0, text.size()));
  EXPECT_NE(gen.err.find("loaded native model"), std::string::npos) << gen.err;

  // Logits bit for bit.
  const std::string a = dir_.file("a.npy"), b = dir_.file("b.npy");
  ASSERT_EQ(run_cli("logits --device cpu -m " + model_ + " --tokens 1,403,407,9,300 -o " + a).exit_code, 0);
  ASSERT_EQ(run_cli("logits --device cpu -m " + out + " --tokens 1,403,407,9,300 -o " + b).exit_code, 0);
  EXPECT_EQ(read_file(a), read_file(b));

  const auto info = run_cli("info -m " + out);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("family        native"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("stored as     F32 matrices (norms and biases F32), converted from llama2c " + model_),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("shared        0 factors"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("saved         0 parameters against dense"), std::string::npos) << info.out;
}

TEST_F(ConvertStories, RefusesToOverwriteWithoutForce) {
  const std::string out = dir_.file("busy");
  fs::create_directories(out);
  dir_.write("busy/notes.txt", std::string("mine"));
  const auto r = run_cli("convert -m " + model_ + " -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(out + ": is not empty; pass --force"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out + "/flashsvd.json"));

  const auto forced = run_cli("convert -m " + model_ + " -o " + out + " --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("carries no tokenizer; pass --tokenizer"), std::string::npos) << forced.err;
  EXPECT_EQ(read_file(out + "/notes.txt"), "mine") << "files that are not the model's stay";
  EXPECT_EQ(run_cli("convert -m " + model_ + " -o " + out + " --force --dtype bf16").exit_code, 0);
  EXPECT_LT(fs::file_size(out + "/model.safetensors"), 600'000u) << "bf16 halves the 1 MB of fp32 weights";
  const auto info = run_cli("info --json -m " + out);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("\"dtype\": \"BF16\""), std::string::npos) << info.out;
}

TEST_F(ConvertStories, BadRequestsAreClearErrors) {
  const std::string out = dir_.file("x");
  auto r = run_cli("convert " + model_ + " -m " + tok_ + " -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give the input once"), std::string::npos) << r.err;
  EXPECT_NE(run_cli("convert " + model_).exit_code, 0) << "-o is required";
  EXPECT_NE(run_cli("convert " + model_ + " -o " + out + " --dtype q4").exit_code, 0);

  ASSERT_EQ(run_cli("convert " + model_ + " -o " + out + " --tokenizer " + tok_).exit_code, 0);
  r = run_cli("convert " + out + " -o " + out + " --force");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is the input"), std::string::npos) << r.err;
  // A native model converts again (here to bf16), keeping its tokenizer.
  const std::string again = dir_.file("again");
  r = run_cli("convert " + out + " -o " + again + " --dtype bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(again + "/tokenizer.bin"));
  const auto gen = run_cli("generate -m " + again + " -n 5 --device cpu");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
}

TEST(InfoCli, NativeModelShowsSharedGroupsAndSavings) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(36, 53, 4, 3, 1, 12, 71);
  spec.ranks = {10, 3, 5, 7, 9, 12, 6};
  spec.share_group = 2;
  const test::TempDir dir("info_shared");
  save_native(testing::random_model(spec), dir.path(), {.dtype = DType::F16, .provenance = {{"method", "test"}}});
  const auto r = run_cli("info -m " + dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"family        native\n",
        "stored as     F16 matrices (norms and biases F32), converted from random random_model\n",
        "provenance    {\"method\":\"test\"}\n", "shared        10 factors stored once for several layers:\n",
        "              q.first [10, 36]: layers 0, 1\n", "              up.first [12, 36]: layers 2, 3\n",
        "saved         "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  const auto j = run_cli("info --json -m " + dir.path());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"saved_params\""), std::string::npos);
  EXPECT_NE(j.out.find("\"factor\": \"gate.first\""), std::string::npos) << j.out;
}

}  // namespace
}  // namespace fsvd
