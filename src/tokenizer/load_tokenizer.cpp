#include "tokenizer/load_tokenizer.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool has_gguf_magic(const std::string& path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

std::unique_ptr<Tokenizer> from_gguf_file(const std::string& path) { return tokenizer_from_gguf(GgufFile(path)); }

std::unique_ptr<Tokenizer> from_directory(const fs::path& dir) {
  // SentencePiece first: Llama-2 style repositories ship both, and the .model is the exact one.
  if (fs::exists(dir / "tokenizer.model"))
    return std::make_unique<SentencePieceTokenizer>((dir / "tokenizer.model").string(),
                                                    read_config_chat_template(dir.string()));
  if (fs::exists(dir / "tokenizer.json")) return load_tokenizer_json((dir / "tokenizer.json").string());
  // What `flashsvd convert` stores for GGUF and llama2.c sources.
  if (fs::exists(dir / "tokenizer.gguf")) return from_gguf_file((dir / "tokenizer.gguf").string());
  if (fs::exists(dir / "tokenizer.bin")) return load_llama2c_tokenizer((dir / "tokenizer.bin").string());
  fail(dir.string(), "no tokenizer.model, tokenizer.json, tokenizer.gguf or tokenizer.bin in this directory");
}

std::unique_ptr<Tokenizer> from_explicit_path(const std::string& path) {
  check(fs::exists(path), path, "tokenizer file not found");
  if (fs::is_directory(path)) return from_directory(path);
  if (ends_with(path, ".model"))
    return std::make_unique<SentencePieceTokenizer>(path, read_config_chat_template(fs::path(path).parent_path()));
  if (ends_with(path, ".json")) return load_tokenizer_json(path);
  if (ends_with(path, ".gguf") || has_gguf_magic(path)) return from_gguf_file(path);
  return load_llama2c_tokenizer(path);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_path, const std::string& tokenizer_path) {
  if (!tokenizer_path.empty()) return from_explicit_path(tokenizer_path);
  check(fs::exists(model_path), model_path, "model not found");
  if (fs::is_directory(model_path)) return from_directory(model_path);
  if (has_gguf_magic(model_path)) return from_gguf_file(model_path);
  fail(model_path, "this checkpoint carries no tokenizer; pass one with --tokenizer (e.g. tokenizer.bin, ",
       "tokenizer.model or tokenizer.json)");
}

}  // namespace fsvd
