#include "families/encoder_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "families/encoder_family.h"
#include "family_test_util.h"
#include "testing/encoder_files.h"
#include "testing/fails_with.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::fails_with;

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]);
}

void expect_same_linear(const Linear& a, const Linear& b) {
  EXPECT_EQ(a.rank(), b.rank());
  expect_equal(a.first, b.first);
  if (b.low_rank()) expect_equal(a.second, b.second);
  expect_equal(a.bias, b.bias);
}

// q, k and o factored at unequal ranks, the MLP dense.
EncoderModel factored(EncoderModel m) {
  for (EncoderLayer& l : m.layers) {
    int64_t rank = 3;
    for (Linear* lin : {&l.q, &l.k, &l.o}) {
      const int64_t out = lin->out(), in = lin->in();
      Tensor first({rank, in}), second({out, rank});
      for (int64_t i = 0; i < first.numel(); ++i) first.data()[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
      for (int64_t i = 0; i < second.numel(); ++i) second.data()[i] = 0.02f * static_cast<float>(i % 13) - 0.1f;
      *lin = Linear{first, second, lin->bias};
      ++rank;
    }
    l.qkv = {};
  }
  m.pack();
  return m;
}

class EncoderWriter : public ::testing::Test {
 protected:
  test::TempDir src_{"encoder_writer_src"}, out_{"encoder_writer_out"};
};

// A sentence-transformers directory: the settings and tokenizer come along,
// the dense weights, exports and model card do not, and the factored model
// loads back tensor for tensor.
TEST_F(EncoderWriter, SentenceTransformersRoundTrip) {
  const EncoderModel dense = testing::random_encoder(testing::small_encoder_config(), 1);
  src_.write("config.json", testing::bert_config_json(dense.config).dump());
  src_.write("model.safetensors", test::build_safetensors(testing::encoder_hf_tensors(dense, "")));
  src_.write("modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  fs::create_directories(src_.file("1_Pooling"));
  fs::create_directories(src_.file("onnx"));
  src_.write("1_Pooling/config.json", R"({"pooling_mode_max_tokens": true})");
  src_.write("sentence_bert_config.json", R"({"max_seq_length": 16})");
  src_.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
  src_.write("README.md", "the dense model");
  src_.write("onnx/model.onnx", "x");
  src_.write("pytorch_model.bin", "x");

  const EncoderModel m = factored(load_encoder(src_.path()));
  save_encoder(m, src_.path(), out_.path(), {{"method", "test"}});
  for (const char* kept : {"config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
                           "vocab.txt", "model.safetensors", "flashsvd_compression.json"})
    EXPECT_TRUE(fs::exists(out_.file(kept))) << kept;
  for (const char* dropped : {"README.md", "onnx", "pytorch_model.bin"})
    EXPECT_FALSE(fs::exists(out_.file(dropped))) << dropped;

  const EncoderModel back = load_encoder(out_.path());
  EXPECT_EQ(back.pooling, Pooling::max);
  EXPECT_TRUE(back.normalize);
  EXPECT_EQ(back.max_tokens, 16);
  expect_equal(back.word_embed, m.word_embed);
  expect_equal(back.type_embed, m.type_embed);
  expect_equal(back.embed_norm.bias, m.embed_norm.bias);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const EncoderLayer &a = back.layers[i], &b = m.layers[i];
    for (auto member : {&EncoderLayer::q, &EncoderLayer::k, &EncoderLayer::v, &EncoderLayer::o, &EncoderLayer::up,
                        &EncoderLayer::down})
      expect_same_linear(a.*member, b.*member);
    expect_equal(a.mlp_norm.weight, b.mlp_norm.weight);
  }
  EXPECT_EQ(back.layers[1].o.rank(), 5);
  EXPECT_EQ(back.layers[0].qkv.first.dim(0), 3 + 4 + 16);  // q|k rank spaces and v's rows
  EXPECT_EQ(back.unique_params(), m.unique_params());
}

// Classifiers keep their head and labels, under the prefixed names transformers writes.
TEST_F(EncoderWriter, BertAndDistilBertClassifiers) {
  EncoderConfig distil = testing::small_encoder_config();
  distil.arch = "distilbert";
  distil.type_vocab = 0;
  for (const EncoderConfig& c : {testing::small_encoder_config(), distil}) {
    EncoderModel want = factored(testing::random_encoder(c, 2, 3));
    const bool bert = c.arch == "bert";
    if (!bert) want.classifier.activation = ClassifierHead::Activation::relu;  // DistilBERT's pre_classifier
    json config = bert ? testing::bert_config_json(c)
                       : json{{"model_type", "distilbert"}, {"dim", c.hidden}, {"hidden_dim", c.intermediate},
                              {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"vocab_size", c.vocab},
                              {"max_position_embeddings", c.max_positions}, {"activation", "gelu"}};
    config["architectures"] = {bert ? "BertForSequenceClassification" : "DistilBertForSequenceClassification"};
    config["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
    src_.write("config.json", config.dump());
    save_encoder(want, src_.path(), out_.path(), json::object());
    EXPECT_FALSE(fs::exists(out_.file("flashsvd_compression.json")));
    const EncoderModel back = load_encoder(out_.path());
    EXPECT_EQ(back.classifier.labels, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(back.classifier.activation, want.classifier.activation);
    expect_same_linear(back.classifier.pre, want.classifier.pre);
    expect_same_linear(back.classifier.out, want.classifier.out);
    expect_same_linear(back.layers[1].k, want.layers[1].k);
    expect_same_linear(back.layers[1].up, want.layers[1].up);
  }
}

// Matrices as bf16 (`convert --dtype bf16`): the linears' factors and the
// embedding tables load back rounded to bf16, biases and LayerNorms exact.
TEST_F(EncoderWriter, MatricesInBf16) {
  const EncoderModel dense = testing::random_encoder(testing::small_encoder_config(), 4);
  src_.write("config.json", testing::bert_config_json(dense.config).dump());
  src_.write("model.safetensors", test::build_safetensors(testing::encoder_hf_tensors(dense, "")));
  const EncoderModel m = factored(load_encoder(src_.path()));
  save_encoder(m, src_.path(), out_.path(), json::object(), DType::BF16);
  const EncoderModel back = load_encoder(out_.path());
  auto expect_rounded = [](const Tensor& got, const Tensor& want) {
    ASSERT_EQ(got.shape(), want.shape());
    int64_t changed = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_EQ(got.data()[i], bf16_to_f32(f32_to_bf16(want.data()[i])));
      changed += got.data()[i] != want.data()[i];
    }
    EXPECT_GT(changed, 0);  // the random values are not all bf16-exact: the rounding happened
  };
  expect_rounded(back.word_embed, m.word_embed);
  expect_rounded(back.position_embed, m.position_embed);
  expect_rounded(back.layers[0].q.first, m.layers[0].q.first);
  expect_rounded(back.layers[0].q.second, m.layers[0].q.second);
  expect_rounded(back.layers[1].up.first, m.layers[1].up.first);
  expect_equal(back.layers[0].q.bias, m.layers[0].q.bias);
  expect_equal(back.layers[1].up.bias, m.layers[1].up.bias);
  expect_equal(back.layers[1].attn_norm.weight, m.layers[1].attn_norm.weight);
  expect_equal(back.embed_norm.bias, m.embed_norm.bias);
  EXPECT_EQ(back.layers[1].o.rank(), m.layers[1].o.rank());
}

TEST_F(EncoderWriter, FactoredLinearErrors) {
  const EncoderModel dense = testing::random_encoder(testing::small_encoder_config(), 3);
  src_.write("config.json", testing::bert_config_json(dense.config).dump());
  auto tensors = testing::encoder_hf_tensors(dense, "");
  const Tensor first({2, 16}), second({16, 2});
  tensors.push_back(testing::st_tensor("encoder.layer.0.attention.self.query.BLinear.weight", first));
  src_.write("model.safetensors", test::build_safetensors(tensors));
  EXPECT_TRUE(fails_with([&] { load_encoder(src_.path()); },
                         "linear encoder.layer.0.attention.self.query is stored both dense (.weight) and factored"));
  std::erase_if(tensors, [](const test::StTensor& t) { return t.name.starts_with("encoder.layer.0.attention.self.query."); });
  tensors.push_back(testing::st_tensor("encoder.layer.0.attention.self.query.BLinear.weight", first));
  src_.write("model.safetensors", test::build_safetensors(tensors));
  EXPECT_TRUE(fails_with([&] { load_encoder(src_.path()); },
                         "tensor encoder.layer.0.attention.self.query.ALinear.weight not found"));
  tensors.push_back(testing::st_tensor("encoder.layer.0.attention.self.query.ALinear.weight", Tensor({16, 3})));
  tensors.push_back(testing::st_tensor("encoder.layer.0.attention.self.query.ALinear.bias", Tensor({16})));
  src_.write("model.safetensors", test::build_safetensors(tensors));
  EXPECT_TRUE(fails_with([&] { load_encoder(src_.path()); }, "ALinear.weight has shape [16, 3]"));
}

}  // namespace
}  // namespace fsvd
