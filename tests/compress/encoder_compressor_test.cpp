#include "compress/encoder_compressor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_encoder.h"
#include "compress/encoder_calibration.h"
#include "core/read_file.h"
#include "testing/encoder_test_data.h"
#include "families/encoder_family.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"
#include "testing/random_encoder.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace fsvd {
namespace {

using test::fails_with;

EncoderCompressOptions options(double keep, CompressMethod method) {
  EncoderCompressOptions o;
  o.keep = keep;
  o.method = method;
  o.threads = 1;
  return o;
}

// Weights of rank 3 fit in the ranks keep 0.8 gives (6 for 16x16, 8 for
// 32x16): both methods reproduce the dense encoder, and everything but the
// layer matrices is the dense model's own storage.
TEST(EncoderCompressor, ExactWhenTheRankSuffices) {
  EncoderModel dense = testing::random_encoder(testing::small_encoder_config(), 5, 2);
  testing::make_layers_low_rank(dense, 3, 11);
  const std::vector<EncoderInput> calib = testing::random_inputs(12, 16, 5, 49, 2);
  const std::vector<EncoderInput> held_out = testing::random_inputs(6, 16, 5, 49, 3);
  for (CompressMethod method : {CompressMethod::Whiten, CompressMethod::Svd}) {
    const CompressedEncoder c = compress_encoder(dense, calib, options(0.8, method));
    const EncoderModel& m = c.model;
    EXPECT_EQ(c.provenance["method"], method_name(method));
    EXPECT_EQ(c.provenance["ranks"]["q"], 6);
    EXPECT_EQ(c.provenance["ranks"]["up"], 8);
    for (const EncoderLayer& l : m.layers) {
      EXPECT_EQ(l.k.rank(), 6);
      EXPECT_EQ(l.down.rank(), 8);
    }
    EXPECT_EQ(m.layers[1].v.bias.storage_id(), dense.layers[1].v.bias.storage_id());
    EXPECT_EQ(m.layers[0].mlp_norm.weight.storage_id(), dense.layers[0].mlp_norm.weight.storage_id());
    EXPECT_EQ(m.word_embed.storage_id(), dense.word_embed.storage_id());
    EXPECT_EQ(m.classifier.pre.first.storage_id(), dense.classifier.pre.first.storage_id());
    EXPECT_EQ(m.layers[0].qkv.first.dim(0), 18);  // packed q|k|v rank spaces
    EXPECT_FALSE(dense.layers[0].q.low_rank());
    EXPECT_LT(c.provenance["layer_params"].get<double>(), 0.8 * c.provenance["dense_layer_params"].get<double>());
    EXPECT_LT(testing::relative_state_error(dense, m, held_out), 1e-9) << method_name(method);
    EXPECT_LT(c.provenance["relative_loss"]["down"][1].get<double>(), 1e-5);
    const std::vector<float> a = CpuEncoder(dense, 1).classify(held_out), b = CpuEncoder(m, 1).classify(held_out);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4);
  }
}

// SVD-LLM's point, on an encoder: calibrated on sentences of a narrow
// vocabulary, whitening's truncation loses less than plain SVD's on other
// sentences of that vocabulary.
TEST(EncoderCompressor, WhiteningBeatsPlainSvdOnHeldOutSentences) {
  EncoderConfig config = testing::small_encoder_config();
  config.hidden = 32;
  config.intermediate = 64;
  config.max_positions = 40;
  const EncoderModel dense = testing::random_encoder(config, 6);
  const std::vector<EncoderInput> calib = testing::random_inputs(60, 30, 5, 14, 4);
  const std::vector<EncoderInput> held_out = testing::random_inputs(30, 30, 5, 14, 5);
  const double white = testing::relative_state_error(
      dense, compress_encoder(dense, calib, options(0.5, CompressMethod::Whiten)).model, held_out);
  const double plain = testing::relative_state_error(
      dense, compress_encoder(dense, calib, options(0.5, CompressMethod::Svd)).model, held_out);
  EXPECT_LT(white, 0.7 * plain) << "whitening " << white << ", plain SVD " << plain;
}

TEST(EncoderCompressor, ClearErrors) {
  const EncoderModel dense = testing::random_encoder(testing::small_encoder_config(), 7);
  const std::vector<EncoderInput> calib = testing::random_inputs(3, 8, 5, 49, 6);
  for (double keep : {0.0, 1.0, 1.5})
    EXPECT_TRUE(fails_with([&] { compress_encoder(dense, calib, options(keep, CompressMethod::Svd)); }, "(0, 1)"));
  EXPECT_TRUE(fails_with([&] { compress_encoder(dense, calib, options(0.05, CompressMethod::Svd)); },
                         "keeps less of the layers than their 352 bias and LayerNorm parameters"));
  EXPECT_TRUE(fails_with([&] { compress_encoder(dense, {}, options(0.5, CompressMethod::Whiten)); },
                         "whitening needs calibration sentences"));
  const EncoderModel chains = testing::random_encoder(testing::small_encoder_config(), 7, 0, true);
  EXPECT_TRUE(fails_with([&] { compress_encoder(chains, calib, options(0.5, CompressMethod::Svd)); },
                         "layer 0 q is already low-rank"));
}

// all-MiniLM-L6-v2 calibrated on the tail of WikiText-2: on paragraphs from
// its head (held out), whitening's embeddings stay closer to the dense ones.
TEST(EncoderCompressor, MiniLmWhiteningBeatsPlainSvdOnHeldOutWikiText) {
  const std::string dir = testing::minilm_dir();
  const std::string wiki = testing::shared_data("text/wikitext2_test.txt");
  if (dir.empty() || wiki.empty()) GTEST_SKIP() << "needs all-MiniLM-L6-v2 (flashsvd pull --encoder) and WikiText-2";
  const EncoderModel dense = load_encoder(dir);
  const WordPieceTokenizer tok = load_wordpiece(dir);
  const std::string text = read_file(wiki, "WikiText-2");
  const std::vector<EncoderInput> calib = encoder_calibration_inputs(tok, text, 2048, 128, wiki);
  std::vector<EncoderInput> held_out;
  for (size_t at = 0; held_out.size() < 24;) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    if (line.size() > 40) held_out.push_back(tok.encode(line, std::nullopt, 128));
    at = end + 1;
  }
  auto mean_cosine = [&](const EncoderModel& m) {
    const std::vector<float> a = CpuEncoder(dense, 1).embed(held_out), b = CpuEncoder(m, 1).embed(held_out);
    const int64_t d = dense.config.hidden, n = static_cast<int64_t>(held_out.size());
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double ab = 0, aa = 0, bb = 0;
      for (int64_t j = 0; j < d; ++j) {
        ab += double{a[i * d + j]} * b[i * d + j];
        aa += double{a[i * d + j]} * a[i * d + j];
        bb += double{b[i * d + j]} * b[i * d + j];
      }
      sum += ab / std::sqrt(aa * bb);
    }
    return sum / static_cast<double>(n);
  };
  const double white = mean_cosine(compress_encoder(dense, calib, options(0.6, CompressMethod::Whiten)).model);
  const double plain = mean_cosine(compress_encoder(dense, calib, options(0.6, CompressMethod::Svd)).model);
  EXPECT_GT(white, plain + 0.05) << "whitening " << white << ", plain SVD " << plain;
  EXPECT_GT(white, 0.6);
}

}  // namespace
}  // namespace fsvd
