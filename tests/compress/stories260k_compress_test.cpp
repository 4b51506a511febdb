// Compression of a real trained model: stories260K on TinyStories, calibrated
// on the tail of the text and evaluated on its head.
#include <gtest/gtest.h>

#include <chrono>

#include "backends/cpu/cpu_executor.h"
#include "compress/calibration.h"
#include "compress/compressor.h"
#include "eval/perplexity.h"
#include "families/load.h"
#include "testing/data_paths.h"
#include "tokenizer/load_tokenizer.h"
#include "testing/files.h"

namespace fsvd {
namespace {

constexpr int kWindow = 512;
constexpr int64_t kEvalWindows = 16;
constexpr int64_t kCalibTokens = 4096;

class Stories260KCompress : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string model = testing::shared_data("models/stories260K/stories260K.bin");
    const std::string tok = testing::shared_data("models/stories260K/tok512.bin");
    const std::string text = testing::shared_data("text/tinystories_val_head.txt");
    if (model.empty() || tok.empty() || text.empty()) GTEST_SKIP() << "stories260K or TinyStories text not found";
    dense_ = load_model(model);
    const auto tokenizer = load_tokenizer(model, tok);
    const std::string text_bytes = test::read_file(text);
    eval_ = tokenizer->encode(text_bytes, tokenizer->adds_bos());
    calibration_ = calibration_tokens(*tokenizer, text_bytes, kCalibTokens);
    // The evaluated head and the calibration tail must not overlap.
    ASSERT_LE(kEvalWindows * kWindow + kCalibTokens, static_cast<int64_t>(eval_.size()));
  }

  double perplexity(const Model& m) {
    CpuExecutor ex(m, kWindow, 1);
    return windowed_perplexity(ex, eval_, kWindow, kEvalWindows).perplexity;
  }

  Model dense_;
  std::vector<int32_t> eval_, calibration_;
};

TEST_F(Stories260KCompress, WhiteningBeatsPlainSvdAndRunsInSeconds) {
  CompressOptions options;
  options.keep = 0.6;
  options.threads = 1;  // steadier than OpenMP on a busy 2-core machine
  const auto start = std::chrono::steady_clock::now();
  const Compressed whitened = compress_model(dense_, calibration_, options);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  options.method = CompressMethod::Svd;
  const Compressed plain = compress_model(dense_, calibration_, options);

  const double dense = perplexity(dense_), white = perplexity(whitened.model), svd = perplexity(plain.model);
  std::printf("stories260K keep 0.6: dense %.3f, whiten %.3f, svd %.3f (compress %.2f s)\n", dense, white, svd, secs);
  EXPECT_LT(dense, white);
  EXPECT_LT(white, svd);
  EXPECT_LT(secs, 20.0);  // about 1 s alone on 2 cores
}

TEST_F(Stories260KCompress, LossAllocationSpendsTheSameBudgetUnevenly) {
  CompressOptions options;
  options.keep = 0.6;
  options.threads = 1;
  const Compressed uniform = compress_model(dense_, calibration_, options);
  options.allocation = RankAllocation::Loss;
  const Compressed loss = compress_model(dense_, calibration_, options);
  EXPECT_EQ(loss.model.unique_params(), uniform.model.unique_params());
  EXPECT_NE(loss.provenance["ranks"], uniform.provenance["ranks"]);
  std::printf("loss-allocated ranks: %s\n", loss.provenance["ranks"].dump().c_str());
}

// Each step of issue 22 lowers the perplexity of the evaluated head at the
// same model fraction: sequential calibration, then the least-squares re-fit;
// and the budgeted allocation beats uniform ranks with dense statistics.
TEST_F(Stories260KCompress, SequentialRefitAndBudgetEachLowerPerplexity) {
  CompressOptions options;
  options.keep = 0.6;
  options.threads = 1;
  const double today = perplexity(compress_model(dense_, calibration_, options).model);
  options.sequential = true;
  const double seq = perplexity(compress_model(dense_, calibration_, options).model);
  options.refit = true;
  const double refit = perplexity(compress_model(dense_, calibration_, options).model);
  options = CompressOptions{};
  options.keep = 0.6;
  options.threads = 1;
  options.allocation = RankAllocation::Budget;
  const Compressed budget = compress_model(dense_, calibration_, options);
  const double budgeted = perplexity(budget.model);
  std::printf("stories260K model keep 0.6: today %.3f, +sequential %.3f, +re-fit %.3f; budget %.3f (%.1f%% of dense)\n",
              today, seq, refit, budgeted, 100.0 * budget.model.unique_params() / dense_.unique_params());
  EXPECT_LT(seq, today);
  EXPECT_LT(refit, seq);
  EXPECT_LT(budgeted, today);
  EXPECT_LE(budget.model.unique_params(), 0.6 * dense_.unique_params());
}

}  // namespace
}  // namespace fsvd
