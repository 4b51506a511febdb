#include "apps/encoder_session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "apps/default_model.h"
#include "core/error.h"
#include "families/encoder_family.h"
#include "families/sentence_transformers.h"
#include "tokenizer/load_encoder_tokenizer.h"

namespace fsvd {

EncoderSession open_encoder(const std::string& path) {
  const std::string dir = path.empty() ? ensure_default_encoder() : path;
  EncoderModel model = load_encoder(dir);
  // The tokenizer files sit beside the Transformer module's config.json.
  std::unique_ptr<EncoderTokenizer> tokenizer = load_encoder_tokenizer(read_sentence_transformers(dir).model_dir);
  return {dir, std::move(model), std::move(tokenizer)};
}

std::vector<std::string> read_input_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path, "cannot open the input file");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  check(!lines.empty(), path, "the input file has no lines");
  return lines;
}

void for_each_batch(int64_t count, int batch, const char* verb, const std::function<void(int64_t, int64_t)>& run) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t begin = 0; begin < count; begin += batch) {
    const int64_t end = std::min<int64_t>(count, begin + batch);
    run(begin, end);
    if (count > 1) std::fprintf(stderr, "\r%s %lld/%lld", verb, static_cast<long long>(end), static_cast<long long>(count));
  }
  if (count > 1) {
    // Tokenization included: what a user's file of inputs takes.
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, " in %.3f s (%.0f inputs/s)\n", s, static_cast<double>(count) / s);
  }
}

}  // namespace fsvd
