// `flashsvd classify` on a small random BERT classifier written as a Hugging Face directory.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_encoder.h"
#include "families/family_test_util.h"
#include "testing/cli_run.h"
#include "testing/encoder_files.h"
#include "testing/random_encoder.h"

namespace fsvd {
namespace {

using testing::run_cli;

TEST(ClassifyCli, LabelsAndProbabilitiesOfTextsAndPairs) {
  const EncoderModel m = testing::random_encoder(testing::small_encoder_config(), 9, 3);
  test::TempDir dir("classify_cli");
  nlohmann::json config = testing::bert_config_json(m.config);
  config["architectures"] = {"BertForSequenceClassification"};
  config["id2label"] = {{"0", "red"}, {"1", "green"}, {"2", "blue"}};
  auto tensors = testing::encoder_hf_tensors(m, "bert.");
  tensors.push_back(testing::st_tensor("bert.pooler.dense.weight", m.classifier.pre.first));
  tensors.push_back(testing::st_tensor("bert.pooler.dense.bias", m.classifier.pre.bias));
  tensors.push_back(testing::st_tensor("classifier.weight", m.classifier.out.first));
  tensors.push_back(testing::st_tensor("classifier.bias", m.classifier.out.bias));
  dir.write("config.json", config.dump());
  dir.write("model.safetensors", test::build_safetensors(tensors));
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 5; i < m.config.vocab; ++i) vocab += "w" + std::to_string(i) + "\n";
  dir.write("vocab.txt", vocab);
  dir.write("input.txt", "w5 w6\nw7\tw8 w9\n");

  const testing::CliResult r = run_cli("classify -t 1 -m " + dir.path() + " --input " + dir.file("input.txt") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  ASSERT_EQ(out.size(), 2u);
  // The same inputs through the CPU encoder: [CLS] w5 w6 [SEP] and [CLS] w7 [SEP] w8 w9 [SEP].
  const std::vector<EncoderInput> inputs = {{{2, 5, 6, 3}, {0, 0, 0, 0}}, {{2, 7, 3, 8, 9, 3}, {0, 0, 0, 1, 1, 1}}};
  const std::vector<float> logits = CpuEncoder(m, 1).classify(inputs);
  const char* names[] = {"red", "green", "blue"};
  for (size_t i = 0; i < 2; ++i) {
    double sum = 0;
    for (int j = 0; j < 3; ++j) sum += std::exp(double{logits[i * 3 + j]});
    int best = 0;
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(out[i]["scores"][names[j]].get<double>(), std::exp(double{logits[i * 3 + j]}) / sum, 1e-5);
      if (logits[i * 3 + j] > logits[i * 3 + best]) best = j;
    }
    EXPECT_EQ(out[i]["label"], names[best]);
  }

  const testing::CliResult plain = run_cli("classify -t 1 -m " + dir.path() + " -p w5 --pair w6");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("red="), std::string::npos) << plain.out;
  const testing::CliResult bad = run_cli("classify -m " + dir.path() + " --input x --pair y");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--pair goes with -p"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fsvd
