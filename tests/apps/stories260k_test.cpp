// End to end on a real trained model: stories260K (llama2.c) against
// upstream's greedy output and the known NLL from shared/data/README.md.
#include <gtest/gtest.h>


#include "backends/cpu/cpu_executor.h"
#include "eval/nll.h"
#include "families/load.h"
#include "runtime/generate.h"
#include "testing/data_paths.h"
#include "tokenizer/load_tokenizer.h"
#include "testing/files.h"

namespace fsvd {
namespace {

using test::read_file;

class Stories260K : public ::testing::Test {
 protected:
  void SetUp() override {
    model_path_ = testing::shared_data("models/stories260K/stories260K.bin");
    tok_path_ = testing::shared_data("models/stories260K/tok512.bin");
    if (model_path_.empty() || tok_path_.empty()) GTEST_SKIP() << "stories260K not found under " FLASHSVD_SHARED_DATA;
  }
  std::string model_path_, tok_path_;
};

TEST_F(Stories260K, GreedyFromBosMatchesUpstreamFor200Steps) {
  const Model model = load_model(model_path_);
  const auto tok = load_tokenizer(model_path_, tok_path_);
  const std::string expected = read_file(testing::shared_data("models/stories260K/greedy_bos_256.txt"));
  ASSERT_GT(expected.size(), 200u);

  // run.c's 200 steps feed BOS and 199 sampled tokens and print 200 tokens.
  CpuExecutor executor(model, 200, 1);
  GenerateOptions options;
  options.max_new_tokens = 200;
  std::string text;
  const GenerateStats stats =
      generate(executor, *tok, {tok->bos_id()}, options, [&](std::string_view s) { text += s; });
  EXPECT_EQ(stats.generated_tokens, 200);
  ASSERT_GT(text.size(), 400u);
  EXPECT_EQ(text, expected.substr(0, text.size()));
}

TEST_F(Stories260K, MeanNllOfTinyStoriesHead) {
  const std::string text_path = testing::shared_data("text/tinystories_val_head.txt");
  if (text_path.empty()) GTEST_SKIP() << "tinystories_val_head.txt not found";
  const Model model = load_model(model_path_);
  const auto tok = load_tokenizer(model_path_, tok_path_);
  std::vector<int32_t> ids = tok->encode(read_file(text_path).substr(0, 3000), true);
  ASSERT_GE(ids.size(), 512u);
  ids.resize(512);
  CpuExecutor executor(model, 512, 0);
  EXPECT_NEAR(mean_nll(executor, ids), 1.3112, 0.001);
}

}  // namespace
}  // namespace fsvd
