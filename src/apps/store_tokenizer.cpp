#include "apps/store_tokenizer.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

// Every name load_tokenizer finds in a directory, plus the config it reads beside them.
constexpr const char* kTokenizerFiles[] = {"tokenizer.model", "tokenizer.json", "tokenizer.gguf", "tokenizer.bin",
                                           "tokenizer_config.json"};

bool has_gguf_magic(const std::string& path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void copy(const fs::path& from, const fs::path& dir, const char* name, std::vector<std::string>& stored) {
  std::error_code ec;
  fs::copy_file(from, dir / name, fs::copy_options::overwrite_existing, ec);
  check(!ec, from.string(), "cannot copy the tokenizer to ", (dir / name).string(), ": ", ec.message());
  stored.push_back(name);
}

// The tokenizer.* metadata of a GGUF (none when the file carries no tokenizer).
void store_gguf_tokenizer(const std::string& path, const fs::path& dir, std::vector<std::string>& stored) {
  const GgufFile gguf(path);
  if (!gguf.has("tokenizer.ggml.model")) return;
  std::map<std::string, GgufValue> keys;
  for (const auto& [key, value] : gguf.metadata())
    if (key.rfind("tokenizer.", 0) == 0) keys.emplace(key, value);
  write_gguf_metadata((dir / "tokenizer.gguf").string(), keys);
  stored.push_back("tokenizer.gguf");
}

void copy_with_config(const fs::path& file, const fs::path& dir, const char* name, std::vector<std::string>& stored) {
  copy(file, dir, name, stored);
  const fs::path config = file.parent_path() / "tokenizer_config.json";
  if (fs::exists(config)) copy(config, dir, "tokenizer_config.json", stored);
}

}  // namespace

std::vector<std::string> store_tokenizer(const std::string& model_path, const std::string& tokenizer_path,
                                         const std::string& dir) {
  const std::string source = tokenizer_path.empty() ? model_path : tokenizer_path;
  check(fs::exists(source), source, "not found");
  std::error_code ec;
  check(!fs::equivalent(source, dir, ec), dir, "is where the tokenizer comes from; choose another directory");
  for (const char* name : kTokenizerFiles) {
    fs::remove(fs::path(dir) / name, ec);
    check(!ec, (fs::path(dir) / name).string(), "cannot remove the old tokenizer file: ", ec.message());
  }
  std::vector<std::string> stored;
  if (fs::is_directory(source)) {
    for (const char* name : kTokenizerFiles)
      if (fs::exists(fs::path(source) / name)) copy(fs::path(source) / name, dir, name, stored);
  } else if (has_gguf_magic(source)) {
    store_gguf_tokenizer(source, dir, stored);
  } else if (!tokenizer_path.empty()) {
    // By name, as --tokenizer decides: .model SentencePiece, .json tokenizer.json, else llama2.c.
    if (ends_with(source, ".model"))
      copy_with_config(source, dir, "tokenizer.model", stored);
    else if (ends_with(source, ".json"))
      copy_with_config(source, dir, "tokenizer.json", stored);
    else
      copy(source, dir, "tokenizer.bin", stored);
  }
  return stored;
}

}  // namespace fsvd
