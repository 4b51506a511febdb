#pragma once
// Byte-level BPE (GPT-2 family: SmolLM, LLaMA-3, Qwen2): pre-tokenize with
// regexes, map each word's bytes to GPT-2's printable characters, then apply
// ranked merges, lowest rank first (leftmost on ties), as Hugging Face
// tokenizers and llama.cpp do. Built from GGUF metadata or a tokenizer.json.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct BpeVocab {
  std::string source;                  // file name for errors
  std::vector<std::string> tokens;     // id -> text (byte-level characters for normal tokens)
  std::vector<TokenKind> kinds;        // id -> kind; control and user-defined tokens are literal text
  std::unordered_map<int32_t, AddedTokenFlags> added_flags;  // how literal tokens are matched, when not all false
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<PretokenizeStep> pretokenize;
  bool ignore_merges = false;          // a word that is itself a token is not merged (LLaMA-3)
  int32_t bos = -1, eos = -1, unk = -1;
  bool add_bos = false;
  std::string chat_template;
};

class BpeTokenizer : public Tokenizer {
 public:
  // Validates the vocabulary (ids, kinds, merges naming known tokens); throws Error naming vocab.source.
  explicit BpeTokenizer(BpeVocab vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const override { return vocab_.bos; }
  int32_t eos_id() const override { return vocab_.eos; }
  std::vector<int32_t> stop_ids() const override;
  bool adds_bos() const override { return vocab_.add_bos && vocab_.bos >= 0; }
  std::string chat_template() const override { return vocab_.chat_template; }

 private:
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;

  BpeVocab vocab_;
  std::unordered_map<std::string, int32_t> ids_;             // text of normal tokens -> id
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged)
  int32_t byte_ids_[256];                                     // id of each single-byte token, -1 if none
  SpecialTokenMatcher specials_;
  std::unique_ptr<Pretokenizer> pretokenizer_;
};

}  // namespace fsvd
