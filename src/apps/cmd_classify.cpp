// flashsvd classify: a sequence-classification encoder's labels and
// probabilities, for single texts or sentence pairs (CPU reference).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "apps/commands.h"
#include "apps/encoder_session.h"
#include "apps/executor_choice.h"
#include "core/error.h"

namespace fsvd {
namespace {

struct ClassifyFlags {
  std::string model;
  std::string prompt;
  std::string pair;   // second text of a pair, with -p
  std::string input;  // one input a line; "A<TAB>B" is a pair
  bool json = false;
  int batch = 32;
  ModelFlags device;  // --device, --precision, --threads
};

struct Text {
  std::string a;
  std::optional<std::string> b;
};

Text split_pair(const std::string& line) {
  const size_t tab = line.find('\t');
  if (tab == std::string::npos) return {line, std::nullopt};
  return {line.substr(0, tab), line.substr(tab + 1)};
}

void run(const ClassifyFlags& f) {
  check(f.prompt.empty() != f.input.empty(), "classify", "give exactly one of -p TEXT or --input FILE");
  check(f.pair.empty() || !f.prompt.empty(), "classify", "--pair goes with -p (in a file, write A<TAB>B)");
  std::vector<Text> texts;
  if (f.input.empty()) {
    texts.push_back({f.prompt, f.pair.empty() ? std::nullopt : std::optional<std::string>(f.pair)});
  } else {
    for (const std::string& line : read_input_lines(f.input)) texts.push_back(split_pair(line));
  }
  const EncoderSession s = open_encoder(f.model);
  const std::vector<std::string>& labels = s.model.classifier.labels;
  check(!labels.empty(), s.path, "is not a sequence-classification model (no classifier head)");
  const std::unique_ptr<EncoderExecutor> encoder = make_encoder_executor(s.model, f.device);
  const int64_t k = static_cast<int64_t>(labels.size()), n = static_cast<int64_t>(texts.size());
  std::vector<float> logits;
  for_each_batch(n, f.batch, "classified", [&](int64_t begin, int64_t end) {
    std::vector<EncoderInput> batch;
    for (int64_t i = begin; i < end; ++i)
      batch.push_back(s.tokenizer->encode(texts[i].a, texts[i].b, s.model.max_tokens));
    const std::vector<float> l = encoder->classify(batch);
    logits.insert(logits.end(), l.begin(), l.end());
  });

  nlohmann::json results = nlohmann::json::array();
  for (int64_t i = 0; i < n; ++i) {
    float* row = logits.data() + i * k;
    // One output is a regression score (STS-B style); several are a softmax over labels.
    if (k > 1) {
      const float mx = *std::max_element(row, row + k);
      float sum = 0;
      for (int64_t j = 0; j < k; ++j) sum += row[j] = std::exp(row[j] - mx);
      for (int64_t j = 0; j < k; ++j) row[j] /= sum;
    }
    const int64_t best = std::max_element(row, row + k) - row;
    if (f.json) {
      nlohmann::json scores;
      for (int64_t j = 0; j < k; ++j) scores[labels[j]] = row[j];
      results.push_back({{"label", labels[best]}, {"scores", scores}});
    } else {
      std::printf("%s\t%.6f", labels[best].c_str(), row[best]);
      for (int64_t j = 0; j < k; ++j) std::printf("\t%s=%.6f", labels[j].c_str(), row[j]);
      std::printf("\n");
    }
  }
  if (f.json) std::printf("%s\n", results.dump().c_str());
}

}  // namespace

void add_classify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "classify", "Labels and probabilities of a sequence-classification encoder, one result per input");
  auto f = std::make_shared<ClassifyFlags>();
  cmd->add_option("-m,--model", f->model, "Sequence-classification encoder directory (Hugging Face)")->required();
  cmd->add_option("-p,--prompt", f->prompt, "One text to classify");
  cmd->add_option("--pair", f->pair, "Second text of a sentence pair (with -p)");
  cmd->add_option("--input", f->input, "File of inputs, one per line; A<TAB>B is a sentence pair");
  cmd->add_flag("--json", f->json, "Print JSON [{label, scores}] instead of one tab-separated line per input");
  cmd->add_option("--batch", f->batch, "Inputs per forward pass")->check(CLI::Range(1, 4096));
  add_encoder_device_flags(*cmd, f->device);
  cmd->callback([f] { run(*f); });
}

}  // namespace fsvd
