#include "families/encoder_family.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "family_test_util.h"
#include "testing/fails_with.h"
#include "testing/encoder_files.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using json = nlohmann::json;
using test::fails_with;

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]);
}

class EncoderFamily : public ::testing::Test {
 protected:
  EncoderModel model_ = testing::random_encoder(testing::small_encoder_config(), 1, 2);
  test::TempDir dir_{"encoder_family"};
  void write(const json& config, std::vector<test::StTensor> tensors) {
    dir_.write("config.json", config.dump());
    dir_.write("model.safetensors", test::build_safetensors(tensors));
  }
};

TEST_F(EncoderFamily, LoadsSentenceTransformersBert) {
  auto tensors = testing::encoder_hf_tensors(model_, "");
  tensors.push_back(testing::st_tensor("pooler.dense.weight", model_.classifier.pre.first));  // unused by embeddings
  tensors.push_back(testing::st_tensor("pooler.dense.bias", model_.classifier.pre.bias));
  write(testing::bert_config_json(model_.config), tensors);
  dir_.write("modules.json", R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  std::filesystem::create_directories(dir_.file("1_Pooling"));
  dir_.write("1_Pooling/config.json", R"({"pooling_mode_cls_token": false, "pooling_mode_max_tokens": true})");
  dir_.write("sentence_bert_config.json", R"({"max_seq_length": 16, "do_lower_case": false})");
  EXPECT_EQ(encoder_mismatch(dir_.path()), "");
  const EncoderModel m = load_encoder(dir_.path());
  EXPECT_EQ(m.pooling, Pooling::max);
  EXPECT_TRUE(m.normalize);
  EXPECT_EQ(m.max_tokens, 16);
  EXPECT_TRUE(m.classifier.empty());
  expect_equal(m.word_embed, model_.word_embed);
  expect_equal(m.type_embed, model_.type_embed);
  expect_equal(m.layers[1].down.first, model_.layers[1].down.first);
  expect_equal(m.layers[0].mlp_norm.bias, model_.layers[0].mlp_norm.bias);
  // q|k|v packed, each part a view of the packed storage.
  EXPECT_EQ(m.layers[0].qkv.first.dim(0), 3 * m.config.hidden);
  EXPECT_EQ(m.layers[0].k.first.storage_id(), m.layers[0].qkv.first.storage_id());
  expect_equal(m.layers[0].k.first, model_.layers[0].k.first);
}

TEST_F(EncoderFamily, LoadsBertClassifierWithLabels) {
  auto tensors = testing::encoder_hf_tensors(model_, "bert.");
  tensors.push_back(testing::st_tensor("bert.pooler.dense.weight", model_.classifier.pre.first));
  tensors.push_back(testing::st_tensor("bert.pooler.dense.bias", model_.classifier.pre.bias));
  tensors.push_back(testing::st_tensor("classifier.weight", model_.classifier.out.first));
  tensors.push_back(testing::st_tensor("classifier.bias", model_.classifier.out.bias));
  json config = testing::bert_config_json(model_.config);
  config["architectures"] = {"BertForSequenceClassification"};
  config["id2label"] = {{"0", "negative"}, {"1", "positive"}};
  write(config, tensors);
  const EncoderModel m = load_encoder(dir_.path());
  EXPECT_EQ(m.classifier.labels, (std::vector<std::string>{"negative", "positive"}));
  EXPECT_EQ(m.classifier.activation, ClassifierHead::Activation::tanh);
  expect_equal(m.classifier.out.first, model_.classifier.out.first);
  EXPECT_EQ(m.pooling, Pooling::mean);  // no sentence-transformers files
  EXPECT_FALSE(m.normalize);
  EXPECT_EQ(m.max_tokens, m.config.max_positions);
}

TEST_F(EncoderFamily, LoadsDistilBert) {
  EncoderConfig c = testing::small_encoder_config();
  c.arch = "distilbert";
  c.type_vocab = 0;
  const EncoderModel want = testing::random_encoder(c, 2);
  write({{"model_type", "distilbert"}, {"architectures", {"DistilBertModel"}}, {"dim", c.hidden},
         {"hidden_dim", c.intermediate}, {"n_layers", c.n_layers}, {"n_heads", c.n_heads}, {"vocab_size", c.vocab},
         {"max_position_embeddings", c.max_positions}, {"activation", "gelu"}},
        testing::encoder_hf_tensors(want, "distilbert."));
  const EncoderModel m = load_encoder(dir_.path());
  EXPECT_EQ(m.config.type_vocab, 0);
  EXPECT_TRUE(m.type_embed.empty());
  expect_equal(m.layers[1].up.first, want.layers[1].up.first);
}

// RoBERTa: BERT's tensor names under "roberta.", positions numbered from
// pad_token_id + 1, the classifier's dense + out_proj head.
TEST_F(EncoderFamily, LoadsRobertaClassifier) {
  EncoderConfig c = testing::small_encoder_config();
  c.arch = "roberta";
  c.type_vocab = 1;
  const EncoderModel want = testing::random_encoder(c, 3, 2);
  json config = testing::bert_config_json(c);
  config["model_type"] = "roberta";
  config["architectures"] = {"RobertaForSequenceClassification"};
  config["pad_token_id"] = 1;
  auto tensors = testing::encoder_hf_tensors(want, "roberta.");
  tensors.push_back(testing::st_tensor("classifier.dense.weight", want.classifier.pre.first));
  tensors.push_back(testing::st_tensor("classifier.dense.bias", want.classifier.pre.bias));
  tensors.push_back(testing::st_tensor("classifier.out_proj.weight", want.classifier.out.first));
  tensors.push_back(testing::st_tensor("classifier.out_proj.bias", want.classifier.out.bias));
  write(config, tensors);
  const EncoderModel m = load_encoder(dir_.path());
  EXPECT_EQ(m.config.position_offset, 2);
  EXPECT_EQ(m.max_tokens, c.max_positions - 2);
  EXPECT_EQ(m.classifier.labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
  EXPECT_EQ(m.classifier.activation, ClassifierHead::Activation::tanh);
  expect_equal(m.position_embed, want.position_embed);
  expect_equal(m.classifier.pre.first, want.classifier.pre.first);
  expect_equal(m.classifier.out.bias, want.classifier.out.bias);
}

TEST_F(EncoderFamily, ClearErrors) {
  json config = testing::bert_config_json(model_.config);
  auto tensors = testing::encoder_hf_tensors(model_, "");
  write(config, tensors);
  ASSERT_NO_THROW(load_encoder(dir_.path()));

  tensors.push_back(testing::st_tensor("cls.predictions.bias", model_.layers[0].q.bias));
  write(config, tensors);
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "cls.predictions.bias"));
  tensors.pop_back();

  config["hidden_act"] = "relu";
  write(config, tensors);
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "activation 'relu'"));
  config["hidden_act"] = "gelu";

  config["architectures"] = {"BertForMaskedLM"};
  write(config, tensors);
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "BertForMaskedLM"));
  config["architectures"] = {"BertModel"};

  config["position_embedding_type"] = "relative_key";
  write(config, tensors);
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "relative_key"));
  config.erase("position_embedding_type");

  config["num_attention_heads"] = 5;
  write(config, tensors);
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "not a multiple"));
  config["num_attention_heads"] = model_.config.n_heads;

  write(config, tensors);
  dir_.write("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
    {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
  std::filesystem::create_directories(dir_.file("1_Pooling"));
  dir_.write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true})");
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "models.Dense"));
  dir_.write("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
    {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  dir_.write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "pooling_mode_lasttoken": true})");
  EXPECT_TRUE(fails_with([&] { load_encoder(dir_.path()); }, "pooling_mode_lasttoken"));

  config["model_type"] = "llama";
  write(config, tensors);
  EXPECT_NE(encoder_mismatch(dir_.path()), "");
  EXPECT_NE(encoder_mismatch(dir_.file("config.json")), "");
}

}  // namespace
}  // namespace fsvd
