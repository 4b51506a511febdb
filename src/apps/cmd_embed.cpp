// flashsvd embed: sentence embeddings of an encoder (all-MiniLM-L6-v2 by
// default), one per input line, computed in batches on --device.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/commands.h"
#include "apps/encoder_session.h"
#include "apps/executor_choice.h"
#include "core/error.h"
#include "formats/npy.h"

namespace fsvd {
namespace {

struct EmbedFlags {
  std::string model;  // empty: the default encoder
  std::string prompt;
  std::string input;
  std::string out;
  bool json = false;
  int batch = 32;
  ModelFlags device;  // --device, --precision, --threads
};

void run(const EmbedFlags& f) {
  check(f.prompt.empty() != f.input.empty(), "embed", "give exactly one of -p TEXT or --input FILE");
  check(f.out.empty() || !f.json, "embed", "give at most one of -o OUT.npy or --json");
  const std::vector<std::string> texts = f.input.empty() ? std::vector<std::string>{f.prompt} : read_input_lines(f.input);
  const EncoderSession s = open_encoder(f.model);
  const std::unique_ptr<EncoderExecutor> encoder = make_encoder_executor(s.model, f.device);
  const int64_t d = s.model.config.hidden, n = static_cast<int64_t>(texts.size());
  std::vector<float> out;
  out.reserve(n * d);
  for_each_batch(n, f.batch, "embedded", [&](int64_t begin, int64_t end) {
    std::vector<EncoderInput> batch;
    for (int64_t i = begin; i < end; ++i) batch.push_back(s.tokenizer->encode(texts[i], std::nullopt, s.model.max_tokens));
    const std::vector<float> e = encoder->embed(batch);
    out.insert(out.end(), e.begin(), e.end());
  });

  if (!f.out.empty()) {
    write_npy_f32(f.out, {n, d}, out.data());
    std::fprintf(stderr, "wrote [%lld, %lld] fp32 embeddings to %s\n", static_cast<long long>(n),
                 static_cast<long long>(d), f.out.c_str());
  } else if (f.json) {
    nlohmann::json j = {{"model", s.path}, {"dim", d}, {"embeddings", nlohmann::json::array()}};
    for (int64_t i = 0; i < n; ++i) j["embeddings"].push_back(std::vector<float>(&out[i * d], &out[(i + 1) * d]));
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (int64_t i = 0; i < n; ++i) {  // one line per input
      for (int64_t k = 0; k < d; ++k) std::printf(k ? " %.9g" : "%.9g", out[i * d + k]);
      std::printf("\n");
    }
  }
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("embed", "Sentence embeddings of an encoder, one per input line");
  auto f = std::make_shared<EmbedFlags>();
  cmd->add_option("-m,--model", f->model,
                  "Encoder directory (Hugging Face or sentence-transformers); default: all-MiniLM-L6-v2");
  cmd->add_option("-p,--prompt", f->prompt, "One text to embed");
  cmd->add_option("--input", f->input, "File of texts to embed, one per line");
  cmd->add_option("-o,--out", f->out, "Write the embeddings as an fp32 .npy [inputs, dim]");
  cmd->add_flag("--json", f->json, "Print JSON {model, dim, embeddings} instead of one line of numbers per input");
  cmd->add_option("--batch", f->batch, "Inputs per forward pass")->check(CLI::Range(1, 4096));
  add_encoder_device_flags(*cmd, f->device);
  cmd->callback([f] { run(*f); });
}

}  // namespace fsvd
