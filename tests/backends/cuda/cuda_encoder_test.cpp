// CudaEncoder against CpuEncoder: dense, factor-chain and low-rank encoders
// over packed batches of odd lengths (one a single token), fp32 mode to the
// CPU's rounding and bf16 to its error, heads of 64 and heads the bf16 path
// pads (32, 80); the real all-MiniLM-L6-v2 against sentence-transformers'
// fixture; bad inputs refused, the encoder still usable after.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/cuda_encoder.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "backends/cpu/cpu_encoder.h"
#include "backends/cuda/decode_test_util.h"
#include "backends/cuda/device_encoder.h"
#include "compress/encoder_compressor.h"
#include "families/encoder_family.h"
#include "model/synthetic.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"
#include "testing/files.h"
#include "testing/random_encoder.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace fsvd::cuda {
namespace {

// Fewer than 16 padding rows, at most 12.5% from 128 on, powers of two from
// 16 on kept; inputs to powers of two, the longest input to a multiple of 64;
// from 4096 rows on the exact shape.
TEST(CudaEncoderBucket, PadsShapesALittle) {
  EXPECT_EQ(pass_bucket({1, 1, 1}), (EncoderPassShape{16, 1, 64}));
  EXPECT_EQ(pass_bucket({100, 3, 70}), (EncoderPassShape{112, 4, 128}));
  EXPECT_EQ(pass_bucket({16384, 32, 512}), (EncoderPassShape{16384, 32, 512}));
  EXPECT_EQ(pass_bucket({1025, 5, 1}), (EncoderPassShape{1152, 8, 64}));
  for (int64_t rows = 1; rows < 128; ++rows) ASSERT_LT(pass_bucket({rows, 1, 1}).rows - rows, 16) << rows;
  EXPECT_EQ(pass_bucket({5000, 7, 100}), (EncoderPassShape{5000, 7, 100}));
  for (int64_t rows = 128; rows < 4096; rows += 7) {
    const int64_t padded = pass_bucket({rows, 1, 1}).rows;
    ASSERT_GE(padded, rows);
    ASSERT_LE(padded, rows + rows / 8) << rows;
  }
}

class CudaEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// Lengths 1, 7, 130, 200, 64; the third a pair (token types 1 from row 60).
std::vector<EncoderInput> batch(int vocab) {
  std::mt19937 rng(7);
  std::vector<EncoderInput> b;
  for (int len : {1, 7, 130, 200, 64}) {
    EncoderInput in;
    for (int t = 0; t < len; ++t) in.ids.push_back(std::uniform_int_distribution<int>(0, vocab - 1)(rng));
    in.type_ids.assign(len, 0);
    if (len == 130)
      for (int t = 60; t < len; ++t) in.type_ids[t] = 1;
    b.push_back(std::move(in));
  }
  return b;
}

// Two heads of `head_dim` (64: the bf16 attention kernel's), intermediate 200.
EncoderConfig gpu_config(int head_dim = 64) {
  EncoderConfig c = testing::small_encoder_config();
  c.hidden = 2 * head_dim;
  c.intermediate = 200;
  c.n_heads = 2;
  c.vocab = 97;
  c.max_positions = 256;
  return c;
}

double relative_error(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]), den += double{b[i]} * b[i];
  return std::sqrt(num / den);
}

// Every input's final states against the CPU's, relative L2 per input.
void expect_states_match(const EncoderModel& m, ElementType type, double tol) {
  const std::vector<EncoderInput> in = batch(m.config.vocab);
  std::vector<float> want, got;
  std::vector<int64_t> want_off, got_off;
  CpuEncoder(m, 0).forward(in, want, want_off);
  CudaEncoder gpu(m, type);
  gpu.forward(in, got, got_off);
  ASSERT_EQ(got_off, want_off);
  const int64_t d = m.config.hidden;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t at = want_off[i] * d, n = (want_off[i + 1] - want_off[i]) * d;
    const double err = relative_error(got.data() + at, want.data() + at, n);
    EXPECT_LT(err, tol) << m.source << " input " << i << " (" << in[i].ids.size() << " tokens)";
    std::fprintf(stderr, "%s %s input %zu: relative error %.3g\n", m.source.c_str(),
                 type == ElementType::F32 ? "fp32" : "bf16", i, err);
  }
}

TEST_F(CudaEncoderTest, DenseMatchesCpu) {
  const EncoderModel m = testing::random_encoder(gpu_config(), 3);
  expect_states_match(m, ElementType::F32, 1e-5);
  expect_states_match(m, ElementType::BF16, 3e-2);
}

// RoBERTa: positions from padding_idx + 1, as the CPU reads them.
TEST_F(CudaEncoderTest, PositionOffsetMatchesCpu) {
  EncoderConfig c = gpu_config();
  c.arch = "roberta";
  c.position_offset = 2;
  const EncoderModel m = testing::random_encoder(c, 9);
  expect_states_match(m, ElementType::F32, 1e-5);
  expect_states_match(m, ElementType::BF16, 3e-2);
}

// Heads of 32 and 80 run zero-padded to 64 and 128 in bf16 (fp32 as they are).
TEST_F(CudaEncoderTest, PaddedHeadsMatchCpu) {
  for (int hd : {32, 80}) {
    expect_states_match(testing::random_encoder(gpu_config(hd), 7), ElementType::BF16, 3e-2);
    expect_states_match(testing::random_encoder(gpu_config(hd), 8, 0, true), ElementType::BF16, 3e-2);
    expect_states_match(testing::random_encoder(gpu_config(hd), 8, 0, true), ElementType::F32, 1e-5);
  }
}

TEST_F(CudaEncoderTest, FactorChainsMatchCpu) {
  const EncoderModel m = testing::random_encoder(gpu_config(), 4, 0, true);
  expect_states_match(m, ElementType::F32, 1e-5);
  expect_states_match(m, ElementType::BF16, 3e-2);
}

// Every q/k/v/o/up/down low-rank (keep 0.5), 12 layers of BERT-base shapes.
TEST_F(CudaEncoderTest, LowRankBertBaseMatchesCpu) {
  const EncoderModel m = make_synthetic_encoder("bert-base", 0.5);
  expect_states_match(m, ElementType::F32, 1e-4);
  expect_states_match(m, ElementType::BF16, 5e-2);
}

// What `flashsvd compress` makes of an encoder: ranks that are no multiple of
// 8 (padded at upload), q|k|v rank spaces packed, heads of 32.
TEST_F(CudaEncoderTest, CompressedEncoderMatchesCpu) {
  const EncoderModel dense = testing::random_encoder(gpu_config(32), 9, 2);
  EncoderCompressOptions options;
  options.keep = 0.6;
  const EncoderModel m = compress_encoder(dense, batch(dense.config.vocab), options).model;
  ASSERT_NE(m.layers[0].q.rank() % 8, 0);
  ASSERT_NE(m.layers[1].down.rank() % 8, 0);
  expect_states_match(m, ElementType::F32, 1e-5);
  expect_states_match(m, ElementType::BF16, 3e-2);
}

// q, k, v second factors of one shape run as one batched GEMM (stacked at
// upload); of different shapes, or beside a dense part, one GEMM each. Both
// against the CPU, with biases on the second factors.
TEST_F(CudaEncoderTest, QkvSecondFactorsStackedOrNot) {
  const EncoderModel dense = testing::random_encoder(gpu_config(), 11);
  auto factored = [&](std::array<int64_t, 3> ranks) {
    EncoderModel m = dense;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.f, 0.15f);
    for (EncoderLayer& l : m.layers) {
      Linear* parts[3] = {&l.q, &l.k, &l.v};
      for (int i = 0; i < 3; ++i) {
        if (ranks[i] == 0) continue;
        const int64_t out = parts[i]->out(), in = parts[i]->in();
        Tensor first({ranks[i], in}), second({out, ranks[i]});
        for (int64_t j = 0; j < first.numel(); ++j) first.data()[j] = normal(rng);
        for (int64_t j = 0; j < second.numel(); ++j) second.data()[j] = normal(rng);
        *parts[i] = Linear{first, second, parts[i]->bias};
      }
      l.qkv = {};
    }
    m.pack();
    return m;
  };
  const EncoderModel same = factored({13, 13, 13}), mixed = factored({0, 13, 21});
  EXPECT_NE(DeviceEncoder(same, ElementType::BF16, 64).layers()[0].qkv.stacked_second.data, nullptr);
  EXPECT_EQ(DeviceEncoder(mixed, ElementType::BF16, 64).layers()[0].qkv.stacked_second.data, nullptr);
  for (const EncoderModel* m : {&same, &mixed}) {
    ASSERT_FALSE(m->layers[0].q.bias.empty());
    expect_states_match(*m, ElementType::F32, 1e-5);
    expect_states_match(*m, ElementType::BF16, 3e-2);
  }
}

// The final states of a forward pass.
std::vector<float> states(CudaEncoder& e, const std::vector<EncoderInput>& in) {
  std::vector<float> s;
  std::vector<int64_t> off;
  e.forward(in, s, off);
  return s;
}

// A shape's third pass replays the graph captured on its second: other ids
// of the same shape, and the shapes around it, give the eager pass's values.
TEST_F(CudaEncoderTest, RepeatedShapesReplayGraphsOfTheSameValues) {
  const EncoderModel m = make_synthetic_encoder("minilm-l6", 0.5);
  std::vector<EncoderInput> a = batch(m.config.vocab), b = a, other = a;
  b.pop_back();
  for (EncoderInput& in : other)
    for (int32_t& id : in.ids) id = (id * 7 + 3) % m.config.vocab;
  CudaEncoder eager(m, ElementType::BF16), graphed(m, ElementType::BF16);
  const std::vector<float> want_a = states(eager, a), want_b = states(eager, b), want_other = states(eager, other);
  auto same = [](const std::vector<float>& got, const std::vector<float>& want) {
    return got.size() == want.size() &&
           relative_error(got.data(), want.data(), static_cast<int64_t>(got.size())) < 1e-6;
  };
  for (int pass = 0; pass < 4; ++pass) {
    EXPECT_TRUE(same(states(graphed, a), want_a)) << "pass " << pass;
    EXPECT_TRUE(same(states(graphed, other), want_other)) << "pass " << pass;
    EXPECT_TRUE(same(states(graphed, b), want_b)) << "pass " << pass;
  }
}

// Batches of different exact shapes in one bucket share a graph and get the
// values an eager pass of their own gives.
TEST_F(CudaEncoderTest, ShapesOfOneBucketShareAGraph) {
  const EncoderModel m = make_synthetic_encoder("minilm-l6", 0.5);
  auto inputs = [&](std::initializer_list<int> lengths, int seed) {
    std::mt19937 rng(seed);
    std::vector<EncoderInput> b;
    for (int len : lengths) {
      EncoderInput in;
      for (int t = 0; t < len; ++t) in.ids.push_back(std::uniform_int_distribution<int>(0, m.config.vocab - 1)(rng));
      in.type_ids.assign(len, 0);
      b.push_back(std::move(in));
    }
    return b;
  };
  const std::vector<EncoderInput> a = inputs({5, 9}, 1), b = inputs({6, 7}, 2);
  ASSERT_EQ(pass_bucket({14, 2, 9}), pass_bucket({13, 2, 30}));
  CudaEncoder eager(m, ElementType::BF16), graphed(m, ElementType::BF16);
  const std::vector<float> want_b = states(eager, b);
  states(graphed, a);
  states(graphed, a);  // captured
  ASSERT_EQ(graphed.graph_count(), 1u);
  const std::vector<float> got_b = states(graphed, b);
  EXPECT_EQ(graphed.graph_count(), 1u);
  ASSERT_EQ(got_b.size(), want_b.size());
  EXPECT_LT(relative_error(got_b.data(), want_b.data(), static_cast<int64_t>(got_b.size())), 1e-6);
}

TEST_F(CudaEncoderTest, EmbeddingsAndClassifierAsCpu) {
  const EncoderModel m = testing::random_encoder(gpu_config(), 5, 3);
  const std::vector<EncoderInput> in = batch(m.config.vocab);
  CpuEncoder cpu(m, 0);
  CudaEncoder gpu(m, ElementType::F32);
  const std::vector<float> e = gpu.embed(in), want_e = cpu.embed(in);
  EXPECT_LT(relative_error(e.data(), want_e.data(), static_cast<int64_t>(e.size())), 1e-5);
  const std::vector<float> l = gpu.classify(in), want_l = cpu.classify(in);
  EXPECT_LT(relative_error(l.data(), want_l.data(), static_cast<int64_t>(l.size())), 1e-5);
}

TEST_F(CudaEncoderTest, RejectsBadInputsAndKeepsWorking) {
  const EncoderModel m = testing::random_encoder(gpu_config(), 6);
  CudaEncoder gpu(m, ElementType::BF16);
  std::vector<EncoderInput> bad = batch(m.config.vocab);
  bad[2].ids[5] = m.config.vocab;
  EXPECT_TRUE(test::fails_with([&] { gpu.embed(bad); }, "outside the vocabulary"));
  bad = batch(m.config.vocab);
  bad[1] = {};
  EXPECT_TRUE(test::fails_with([&] { gpu.embed(bad); }, "must be equal and non-zero"));
  bad = batch(m.config.vocab);
  bad[0].ids.assign(m.config.max_tokens() + 1, 1);
  bad[0].type_ids.assign(m.config.max_tokens() + 1, 0);
  EXPECT_TRUE(test::fails_with([&] { gpu.embed(bad); }, "exceed the model's"));
  const std::vector<float> e = gpu.embed(batch(m.config.vocab)), want = CpuEncoder(m, 0).embed(batch(m.config.vocab));
  EXPECT_LT(relative_error(e.data(), want.data(), static_cast<int64_t>(e.size())), 3e-2);
}

// all-MiniLM-L6-v2 against sentence-transformers: cosine > 0.99999 in fp32,
// > 0.999 in bf16 (heads of 32 padded to 64).
TEST_F(CudaEncoderTest, MiniLmMatchesSentenceTransformers) {
  const std::string dir = testing::minilm_dir();
  if (dir.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 not cached (run `flashsvd pull --encoder`)";
  const nlohmann::json fx = nlohmann::json::parse(test::read_file(testing::fixture("encoder/minilm_embeddings.json")));
  const EncoderModel m = load_encoder(dir);
  const WordPieceTokenizer tok = load_wordpiece(dir);
  std::vector<EncoderInput> in;
  for (const nlohmann::json& c : fx["cases"]) in.push_back(tok.encode(c["text"].get<std::string>(), std::nullopt, m.max_tokens));
  const int64_t d = m.config.hidden;
  for (const auto& [type, bound] : {std::pair{ElementType::F32, 0.99999}, std::pair{ElementType::BF16, 0.999}}) {
    const std::vector<float> e = CudaEncoder(m, type).embed(in);
    for (size_t i = 0; i < in.size(); ++i) {
      const std::vector<float> want = fx["cases"][i]["embedding"].get<std::vector<float>>();
      double ab = 0, aa = 0, bb = 0;
      for (int64_t j = 0; j < d; ++j)
        ab += double{e[i * d + j]} * want[j], aa += double{e[i * d + j]} * e[i * d + j], bb += double{want[j]} * want[j];
      const double cosine = ab / std::sqrt(aa * bb);
      EXPECT_GT(cosine, bound) << fx["cases"][i]["text"];
      std::fprintf(stderr, "MiniLM %s case %zu: cosine %.9f\n", type == ElementType::F32 ? "fp32" : "bf16", i, cosine);
    }
  }
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
