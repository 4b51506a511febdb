// Tokenizers described by GGUF metadata (the keys llama.cpp's convert scripts write).
#include <climits>
#include <cstdint>

#include "core/error.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/scored_tokenizer.h"

namespace fsvd {
namespace {

struct Reader {
  const GgufFile& g;

  const GgufArray& array(const std::string& key, size_t expected) const {
    const GgufArray& a = g.get(key).as_array(key);
    check(expected == SIZE_MAX || a.size() == expected, g.path(), key, " has ", a.size(), " entries, expected ",
          expected);
    return a;
  }
  std::vector<std::string> strings(const std::string& key, size_t expected = SIZE_MAX) const {
    std::vector<std::string> out;
    for (const GgufValue& v : array(key, expected)) out.push_back(v.as_string(key));
    return out;
  }
  int32_t id(const std::string& key) const {
    if (!g.has(key)) return -1;
    const int64_t v = g.get(key).as_int(key);
    check(v >= -1 && v <= INT32_MAX, g.path(), key, " = ", v, " is not a token id");
    return static_cast<int32_t>(v);
  }
  bool flag(const std::string& key, bool fallback) const { return g.has(key) ? g.get(key).as_bool(key) : fallback; }
  std::string text(const std::string& key) const { return g.has(key) ? g.get(key).as_string(key) : std::string(); }

  std::vector<TokenKind> kinds(size_t n) const {
    const std::string key = "tokenizer.ggml.token_type";
    if (!g.has(key)) return std::vector<TokenKind>(n, TokenKind::kNormal);
    std::vector<TokenKind> out;
    for (const GgufValue& v : array(key, n)) {
      const int64_t t = v.as_int(key);
      check(t >= 1 && t <= 6, g.path(), key, "[", out.size(), "] = ", t, " is not a known token type");
      out.push_back(static_cast<TokenKind>(t));
    }
    return out;
  }
};

std::unique_ptr<Tokenizer> bpe_from_gguf(const Reader& r) {
  BpeVocab v;
  v.source = r.g.path();
  v.tokens = r.strings("tokenizer.ggml.tokens");
  v.kinds = r.kinds(v.tokens.size());
  for (const std::string& m : r.strings("tokenizer.ggml.merges")) {
    const size_t space = m.find(' ', 1);  // from 1, as llama.cpp: a merge never starts with its separator
    check(space != std::string::npos, v.source, "merge '", m, "' (entry ", v.merges.size(),
          " of tokenizer.ggml.merges) has no space separating its two parts");
    v.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  const std::string pre = r.text("tokenizer.ggml.pre");
  v.pretokenize = pretokenize_steps_for(pre, v.source);
  v.ignore_merges = pre == "llama-bpe" || pre == "llama3";  // llama.cpp's LLaMA-3 rule
  v.bos = r.id("tokenizer.ggml.bos_token_id");
  v.eos = r.id("tokenizer.ggml.eos_token_id");
  v.unk = r.id("tokenizer.ggml.unknown_token_id");
  v.add_bos = r.flag("tokenizer.ggml.add_bos_token", false);
  v.chat_template = r.text("tokenizer.chat_template");
  return std::make_unique<BpeTokenizer>(std::move(v));
}

std::unique_ptr<Tokenizer> scored_from_gguf(const Reader& r) {
  ScoredVocab v;
  v.source = r.g.path();
  v.pieces = r.strings("tokenizer.ggml.tokens");
  for (std::string& p : v.pieces) {  // SentencePiece writes spaces as U+2581
    for (size_t at = p.find("\xE2\x96\x81"); at != std::string::npos; at = p.find("\xE2\x96\x81", at + 1))
      p.replace(at, 3, " ");
  }
  const std::string key = "tokenizer.ggml.scores";
  for (const GgufValue& s : r.array(key, v.pieces.size())) v.scores.push_back(static_cast<float>(s.as_float(key)));
  v.kinds = r.kinds(v.pieces.size());
  v.bos = r.id("tokenizer.ggml.bos_token_id");
  v.eos = r.id("tokenizer.ggml.eos_token_id");
  v.unk = r.id("tokenizer.ggml.unknown_token_id");
  v.add_bos = r.flag("tokenizer.ggml.add_bos_token", true);
  v.add_dummy_prefix = r.flag("tokenizer.ggml.add_space_prefix", true);
  v.chat_template = r.text("tokenizer.chat_template");
  return std::make_unique<ScoredTokenizer>(std::move(v));
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf) {
  const Reader r{gguf};
  check(gguf.has("tokenizer.ggml.model"), gguf.path(), "no tokenizer in this GGUF (tokenizer.ggml.model missing)");
  const std::string model = r.text("tokenizer.ggml.model");
  if (model == "gpt2") return bpe_from_gguf(r);
  if (model == "llama") return scored_from_gguf(r);
  fail(gguf.path(), "unsupported tokenizer.ggml.model '", model, "' (supported: gpt2, llama)");
}

}  // namespace fsvd
