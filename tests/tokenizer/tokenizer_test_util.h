#pragma once
// Shared by the tokenizer tests: reading fixtures, random text, checking framed pairs.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "testing/data_paths.h"
#include "testing/files.h"
#include "tokenizer/encoder_tokenizer.h"

namespace fsvd::testing {


using test::read_file;

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

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

// `tok` frames the fixture's {a, b (or null), max_tokens, ids, type_ids} as Hugging Face did.
inline void expect_framed(const EncoderTokenizer& tok, const nlohmann::json& pairs, const std::string& label) {
  ASSERT_FALSE(pairs.empty()) << label;
  for (const nlohmann::json& p : pairs) {
    std::optional<std::string> b;
    if (!p["b"].is_null()) b = p["b"].get<std::string>();
    const EncoderInput in = tok.encode(p["a"].get<std::string>(), b, p.value("max_tokens", 0));
    EXPECT_EQ(in.ids, p["ids"].get<std::vector<int32_t>>()) << label << ": " << p["a"];
    if (p.contains("type_ids")) {
      EXPECT_EQ(in.type_ids, p["type_ids"].get<std::vector<int32_t>>()) << label << ": " << p["a"];
    }
  }
}

// The merges of a tokenizer.json's BPE model as transformers' merges.txt.
inline std::string merges_txt(const nlohmann::json& tokenizer) {
  std::string text = "#version: 0.2\n";
  for (const nlohmann::json& m : tokenizer.at("model").at("merges"))
    text += m[0].get<std::string>() + " " + m[1].get<std::string>() + "\n";
  return text;
}

}  // namespace fsvd::testing
