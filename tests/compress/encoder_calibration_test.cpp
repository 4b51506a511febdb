#include "compress/encoder_calibration.h"

#include <gtest/gtest.h>

#include "testing/encoder_test_data.h"
#include "testing/fails_with.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using test::fails_with;

// One input per non-empty line, the last lines first until the count is
// reached, returned in text order and truncated to the model's limit.
TEST(EncoderCalibrationInputs, LastLinesUpToTheTokenCount) {
  const WordPieceTokenizer tok = testing::small_tokenizer(50);
  const std::string text = "w5 w6\n\n  \nw7 w8 w9\r\nw10\n";
  std::vector<EncoderInput> in = encoder_calibration_inputs(tok, text, 3, 16, "calib.txt");
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].ids, (std::vector<int32_t>{2, 10, 3}));
  in = encoder_calibration_inputs(tok, text, 4, 16, "calib.txt");
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].ids, (std::vector<int32_t>{2, 7, 8, 9, 3}));
  in = encoder_calibration_inputs(tok, text, 1000, 4, "calib.txt");
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].ids, (std::vector<int32_t>{2, 5, 6, 3}));
  EXPECT_EQ(in[1].ids, (std::vector<int32_t>{2, 7, 8, 3}));  // truncated
  EXPECT_TRUE(fails_with([&] { encoder_calibration_inputs(tok, "\n  \n", 10, 16, "calib.txt"); },
                         "calib.txt: the calibration text has no non-empty line"));
  EXPECT_TRUE(fails_with([&] { encoder_calibration_inputs(tok, text, 0, 16, "calib.txt"); }, "must be positive"));
}

// XᵀX of each linear input over every calibration row, whatever the batching
// and the layer group.
TEST(EncoderCalibration, GramsOfEveryRowInAnyBatching) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 3);
  const std::vector<EncoderInput> inputs = testing::random_inputs(9, 12, 5, 49, 1);
  int64_t tokens = 0;
  for (const EncoderInput& in : inputs) tokens += static_cast<int64_t>(in.ids.size());

  // The rows the down projection of layer 1 reads, from the encoder's own observer.
  CpuEncoder enc(m, 1);
  std::vector<float> rows;
  enc.set_observer([&](int layer, LinearInput input, const float* x, int64_t n, int64_t dim) {
    if (layer == 1 && input == LinearInput::Down) rows.assign(x, x + n * dim);
  });
  std::vector<float> states;
  std::vector<int64_t> offsets;
  enc.forward(inputs, states, offsets);
  const int64_t f = m.config.intermediate;

  EncoderCalibration one_batch(m, inputs, 10000, 1), small_batches(m, inputs, 20, 1);
  EXPECT_EQ(one_batch.batches(), 1);
  EXPECT_GT(small_batches.batches(), 3);
  EXPECT_EQ(one_batch.tokens(), tokens);
  EXPECT_EQ(one_batch.bytes_per_layer(), (3 * 16 * 16 + f * f) * 8);
  const std::vector<LayerGrams> all = one_batch.layer_grams(0, 2);
  const std::vector<LayerGrams> last = small_batches.layer_grams(1, 2);
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(last.size(), 1u);
  const Gram& a = all[1][static_cast<int>(LinearInput::Down)];
  const Gram& b = last[0][static_cast<int>(LinearInput::Down)];
  EXPECT_EQ(a.rows(), tokens);
  EXPECT_EQ(b.rows(), tokens);
  EXPECT_EQ(all[0][static_cast<int>(LinearInput::Qkv)].dim(), 16);
  for (int64_t i = 0; i < f; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double want = 0;
      for (int64_t r = 0; r < tokens; ++r) want += double{rows[r * f + i]} * rows[r * f + j];
      // Batches of other sizes round their GEMMs differently: fp32-level agreement.
      EXPECT_NEAR(a.lower()[i * f + j], want, 1e-5 * (1 + std::abs(want)));
      EXPECT_NEAR(b.lower()[i * f + j], want, 1e-5 * (1 + std::abs(want)));
    }
  EXPECT_TRUE(fails_with([&] { one_batch.layer_grams(1, 3); }, "outside the encoder's 2 layers"));
}

}  // namespace
}  // namespace fsvd
