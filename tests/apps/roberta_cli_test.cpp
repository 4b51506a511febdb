// `flashsvd classify` and `embed` on a small random RoBERTa written as a Hugging
// Face directory with the RoBERTa tokenizer fixture: the CLI's outputs must be
// the encoder's on the ids Hugging Face tokenizers gives (tests/fixtures/tokenizer/roberta_bpe.json).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_encoder.h"
#include "families/family_test_util.h"
#include "testing/cli_run.h"
#include "testing/data_paths.h"
#include "testing/encoder_files.h"
#include "testing/files.h"
#include "testing/random_encoder.h"
#include "tokenizer/tokenizer_test_util.h"

namespace fsvd {
namespace {

using nlohmann::json;
using testing::run_cli;

class RobertaCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const json fixture = json::parse(test::read_file(testing::fixture("tokenizer/roberta_bpe.json")));
    tokenizer_ = test::read_file(testing::fixture(fixture["tokenizer"]));
    for (const json& c : fixture["cases"])
      if (c["text"] == "Hello world") hello_ = c["ids"].get<std::vector<int32_t>>();
    for (const json& p : fixture["pairs"])
      if (p["max_tokens"] == kMaxTokens) pair_ = p;
    ASSERT_FALSE(hello_.empty());
    ASSERT_FALSE(pair_.is_null());
  }
  // A 600-token RoBERTa (the fixture's vocabulary) whose position table leaves kMaxTokens after the offset.
  static EncoderModel model(int labels) {
    EncoderConfig c = testing::small_encoder_config();
    c.arch = "roberta";
    c.vocab = 600;
    c.type_vocab = 1;
    c.position_offset = 2;
    c.max_positions = kMaxTokens + 2;
    return testing::random_encoder(c, 21, labels);
  }
  static void write_model(const test::TempDir& dir, const EncoderModel& m) {
    json config = testing::bert_config_json(m.config);
    config["model_type"] = "roberta";
    config["pad_token_id"] = 1;
    auto tensors = testing::encoder_hf_tensors(m, "roberta.");
    if (!m.classifier.empty()) {
      config["architectures"] = {"RobertaForSequenceClassification"};
      config["id2label"] = {{"0", "negative"}, {"1", "positive"}};
      tensors.push_back(testing::st_tensor("classifier.dense.weight", m.classifier.pre.first));
      tensors.push_back(testing::st_tensor("classifier.dense.bias", m.classifier.pre.bias));
      tensors.push_back(testing::st_tensor("classifier.out_proj.weight", m.classifier.out.first));
      tensors.push_back(testing::st_tensor("classifier.out_proj.bias", m.classifier.out.bias));
    } else {
      config["architectures"] = {"RobertaModel"};
    }
    dir.write("config.json", config.dump());
    dir.write("model.safetensors", test::build_safetensors(tensors));
  }
  // <s> Hello world </s>, and the fixture's pair truncated to kMaxTokens (its longer text cut).
  std::vector<EncoderInput> inputs() const {
    std::vector<int32_t> single = {0};
    single.insert(single.end(), hello_.begin(), hello_.end());
    single.push_back(2);
    const auto pair = pair_["ids"].get<std::vector<int32_t>>();
    return {{single, std::vector<int32_t>(single.size(), 0)}, {pair, std::vector<int32_t>(pair.size(), 0)}};
  }
  std::string input_file(const test::TempDir& dir) const {
    const std::string pair = pair_["a"].get<std::string>() + "\t" + pair_["b"].get<std::string>();
    dir.write("input.txt", "Hello world\n" + pair + "\n");
    return dir.file("input.txt");
  }

  static constexpr int kMaxTokens = 14;
  std::string tokenizer_;
  std::vector<int32_t> hello_;
  json pair_;
};

TEST_F(RobertaCli, ClassifyWithTokenizerJson) {
  const EncoderModel m = model(2);
  test::TempDir dir("roberta_classify");
  write_model(dir, m);
  dir.write("tokenizer.json", tokenizer_);
  const testing::CliResult r = run_cli("classify -t 1 -m " + dir.path() + " --input " + input_file(dir) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> logits = CpuEncoder(m, 1).classify(inputs());
  for (size_t i = 0; i < 2; ++i) {
    const double z = std::exp(double{logits[2 * i]}) + std::exp(double{logits[2 * i + 1]});
    EXPECT_NEAR(out[i]["scores"]["negative"].get<double>(), std::exp(double{logits[2 * i]}) / z, 1e-5) << i;
    EXPECT_NEAR(out[i]["scores"]["positive"].get<double>(), std::exp(double{logits[2 * i + 1]}) / z, 1e-5) << i;
  }
}

TEST_F(RobertaCli, EmbedWithVocabAndMerges) {
  const EncoderModel m = model(0);
  test::TempDir dir("roberta_embed");
  write_model(dir, m);
  const json tok = json::parse(tokenizer_);
  dir.write("vocab.json", tok["model"]["vocab"].dump());
  dir.write("merges.txt", testing::merges_txt(tok));
  const testing::CliResult r = run_cli("embed -t 1 -m " + dir.path() + " -p 'Hello world' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  const std::vector<float> want = CpuEncoder(m, 1).embed(std::vector<EncoderInput>{inputs()[0]});
  EXPECT_EQ(out["dim"], m.config.hidden);
  const auto got = out["embeddings"][0].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  dir.write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  const testing::CliResult bad = run_cli("embed -m " + dir.path() + " -p x");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("not supported for encoders"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fsvd
