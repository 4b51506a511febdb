#include "backends/cpu/cpu_encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "families/encoder_family.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"
#include "testing/files.h"
#include "testing/random_encoder.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace fsvd {
namespace {

using test::fails_with;

EncoderInput input(std::vector<int32_t> ids, int second_from = -1) {
  EncoderInput in{ids, std::vector<int32_t>(ids.size(), 0)};
  for (size_t t = second_from < 0 ? ids.size() : second_from; t < ids.size(); ++t) in.type_ids[t] = 1;
  return in;
}

const std::vector<EncoderInput> kBatch = {input({2, 7, 9, 3}), input({2, 11, 3, 12, 13, 14, 3}, 3), input({2, 3}),
                                          input({2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 3})};

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Packing inputs of different lengths into one pass must equal running each alone.
TEST(CpuEncoder, PackedBatchEqualsOneByOne) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 1);
  CpuEncoder enc(m, 1);
  std::vector<float> states;
  std::vector<int64_t> offsets;
  enc.forward(kBatch, states, offsets);
  ASSERT_EQ(offsets.size(), kBatch.size() + 1);
  const int64_t d = m.config.hidden;
  for (size_t i = 0; i < kBatch.size(); ++i) {
    std::vector<float> alone;
    std::vector<int64_t> one;
    enc.forward({&kBatch[i], 1}, alone, one);
    ASSERT_EQ(one.back() * d, static_cast<int64_t>(alone.size()));
    for (int64_t j = 0; j < one.back() * d; ++j) ASSERT_NEAR(alone[j], states[offsets[i] * d + j], 1e-5) << i;
  }
}

// A layer linear as the chain (second = I) · W computes what W does.
TEST(CpuEncoder, FactorChainsEqualDense) {
  const EncoderConfig c = testing::small_encoder_config();
  const EncoderModel dense = testing::random_encoder(c, 2), chained = testing::random_encoder(c, 2, 0, true);
  ASSERT_TRUE(chained.layers[0].q.low_rank());
  const std::vector<float> a = CpuEncoder(dense, 1).embed(kBatch), b = CpuEncoder(chained, 1).embed(kBatch);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(CpuEncoder, PoolingAndNormalization) {
  EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 3);
  const int64_t d = m.config.hidden;
  std::vector<float> states;
  std::vector<int64_t> offsets;
  CpuEncoder(m, 1).forward(kBatch, states, offsets);
  const size_t i = 1;  // a pair
  const float* rows = states.data() + offsets[i] * d;
  const int64_t len = offsets[i + 1] - offsets[i];
  for (Pooling p : {Pooling::cls, Pooling::mean, Pooling::max}) {
    m.pooling = p;
    for (bool normalize : {false, true}) {
      m.normalize = normalize;
      const std::vector<float> e = CpuEncoder(m, 1).embed(kBatch);
      std::vector<float> want(d);
      for (int64_t j = 0; j < d; ++j) {
        float mean = 0, mx = rows[j];
        for (int64_t t = 0; t < len; ++t) {
          mean += rows[t * d + j] / static_cast<float>(len);
          mx = std::max(mx, rows[t * d + j]);
        }
        want[j] = p == Pooling::cls ? rows[j] : p == Pooling::mean ? mean : mx;
      }
      double norm = 0;
      for (float x : want) norm += double{x} * x;
      for (int64_t j = 0; j < d; ++j)
        EXPECT_NEAR(e[i * d + j], normalize ? want[j] / std::sqrt(norm) : want[j], 1e-5) << pooling_name(p);
    }
  }
}

TEST(CpuEncoder, ClassifierReadsTheFirstToken) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 4, 3);
  CpuEncoder enc(m, 1);
  const std::vector<float> logits = enc.classify(kBatch);
  ASSERT_EQ(logits.size(), kBatch.size() * 3);
  std::vector<float> states;
  std::vector<int64_t> offsets;
  enc.forward(kBatch, states, offsets);
  const int64_t d = m.config.hidden;
  const ClassifierHead& h = m.classifier;
  for (size_t i = 0; i < kBatch.size(); ++i) {
    const float* x = states.data() + offsets[i] * d;
    std::vector<float> pre(d);
    for (int64_t r = 0; r < d; ++r) {
      double s = h.pre.bias.data()[r];
      for (int64_t k = 0; k < d; ++k) s += double{h.pre.first.data()[r * d + k]} * x[k];
      pre[r] = std::tanh(static_cast<float>(s));
    }
    for (int64_t r = 0; r < 3; ++r) {
      double s = h.out.bias.data()[r];
      for (int64_t k = 0; k < d; ++k) s += double{h.out.first.data()[r * d + k]} * pre[k];
      EXPECT_NEAR(logits[i * 3 + r], s, 1e-4);
    }
  }
  const EncoderModel plain = testing::random_encoder(testing::small_encoder_config(), 4);
  EXPECT_TRUE(fails_with([&] { CpuEncoder(plain, 1).classify(kBatch); }, "not a sequence-classification"));
}

// RoBERTa's first token sits at position padding_idx + 1: the same model with
// its position table moved up by the offset, read from position 0, is BERT.
TEST(CpuEncoder, PositionOffsetSkipsTheFirstRows) {
  EncoderConfig c = testing::small_encoder_config();
  c.arch = "roberta";
  c.position_offset = 2;
  const EncoderModel roberta = testing::random_encoder(c, 4);
  EncoderModel bert = testing::random_encoder(testing::small_encoder_config(), 4);  // the same weights
  const std::vector<float> want = CpuEncoder(roberta, 1).embed(kBatch);
  EXPECT_NE(CpuEncoder(bert, 1).embed(kBatch), want);
  const float* rows = roberta.position_embed.data();
  std::copy(rows + 2 * c.hidden, rows + c.max_positions * c.hidden, bert.position_embed.data());
  EXPECT_EQ(CpuEncoder(bert, 1).embed(kBatch), want);
}

// The observer sees each layer's four linear inputs once per forward, over the
// rows of every input: q|k|v reads layer 0's embedded rows, and what the last
// MLP's down reads reproduces the final states through it.
TEST(CpuEncoder, ObserverSeesEveryLinearInput) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 4);
  CpuEncoder enc(m, 1);
  std::map<std::pair<int, int>, int> calls;
  std::vector<float> up_in, down_in;
  int64_t rows = 0;
  enc.set_observer([&](int layer, LinearInput input, const float* x, int64_t n, int64_t dim) {
    ++calls[{layer, static_cast<int>(input)}];
    rows = n;
    EXPECT_EQ(dim, input == LinearInput::Down ? m.config.intermediate : m.config.hidden);
    if (layer == 1 && input == LinearInput::GateUp) up_in.assign(x, x + n * dim);
    if (layer == 1 && input == LinearInput::Down) down_in.assign(x, x + n * dim);
  });
  std::vector<float> states;
  std::vector<int64_t> offsets;
  enc.forward(kBatch, states, offsets);
  EXPECT_EQ(calls.size(), 8u);
  for (const auto& [key, count] : calls) EXPECT_EQ(count, 1);
  EXPECT_EQ(rows, offsets.back());
  // The last layer's output, recomputed from the rows its MLP read: LN(x + down(h) + bias).
  const int64_t d = m.config.hidden, f = m.config.intermediate, row = 5;
  const EncoderLayer& l = m.layers[1];
  std::vector<double> pre(d);
  for (int64_t j = 0; j < d; ++j) {
    double acc = l.down.bias.data()[j] + up_in[row * d + j];
    for (int64_t k = 0; k < f; ++k) acc += double{l.down.first.data()[j * f + k]} * down_in[row * f + k];
    pre[j] = acc;
  }
  double mean = 0, var = 0;
  for (double v : pre) mean += v / d;
  for (double v : pre) var += (v - mean) * (v - mean) / d;
  for (int64_t j = 0; j < d; ++j) {
    const double want = (pre[j] - mean) / std::sqrt(var + m.config.ln_eps) * l.mlp_norm.weight.data()[j] +
                        l.mlp_norm.bias.data()[j];
    EXPECT_NEAR(states[row * d + j], want, 1e-4);
  }
  enc.set_observer(nullptr);
  calls.clear();
  enc.forward(kBatch, states, offsets);
  EXPECT_TRUE(calls.empty());
}

TEST(CpuEncoder, RejectsBadInputs) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 5);
  CpuEncoder enc(m, 1);
  auto embed = [&](EncoderInput in) { enc.embed({&in, 1}); };
  EXPECT_TRUE(fails_with([&] { embed(input({2, 50, 3})); }, "outside the vocabulary"));
  EXPECT_TRUE(fails_with([&] { embed(input({})); }, "must be equal and non-zero"));
  EXPECT_TRUE(fails_with([&] { embed(input(std::vector<int32_t>(25, 4))); }, "exceed the model's 24 positions"));
  EncoderInput bad_type = input({2, 3});
  bad_type.type_ids[1] = 2;
  EXPECT_TRUE(fails_with([&] { embed(bad_type); }, "token type 2"));
}

// all-MiniLM-L6-v2 against sentence-transformers (CPU torch fp32):
// tests/backends/make_minilm_embeddings.py wrote the fixture.
TEST(CpuEncoder, MiniLmMatchesSentenceTransformers) {
  const std::string dir = testing::minilm_dir();
  if (dir.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 not cached (run `flashsvd pull --encoder`)";
  const nlohmann::json fx = nlohmann::json::parse(test::read_file(testing::fixture("encoder/minilm_embeddings.json")));
  const EncoderModel m = load_encoder(dir);
  EXPECT_EQ(m.pooling, Pooling::mean);
  EXPECT_TRUE(m.normalize);
  EXPECT_EQ(m.max_tokens, 256);
  const WordPieceTokenizer tok = load_wordpiece(dir);
  std::vector<EncoderInput> batch;
  for (const nlohmann::json& c : fx["cases"]) {
    batch.push_back(tok.encode(c["text"].get<std::string>(), std::nullopt, m.max_tokens));
    EXPECT_EQ(batch.back().ids, c["ids"].get<std::vector<int32_t>>()) << c["text"];
  }
  const std::vector<float> e = CpuEncoder(m, 2).embed(batch);  // all inputs packed into one pass
  const int64_t d = m.config.hidden;
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::vector<float> want = fx["cases"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(static_cast<int64_t>(want.size()), d);
    EXPECT_GT(cosine(e.data() + i * d, want.data(), d), 0.99999) << fx["cases"][i]["text"];
  }
}

}  // namespace
}  // namespace fsvd
