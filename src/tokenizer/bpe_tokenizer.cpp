#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pair_merge.h"

namespace fsvd {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

bool is_literal(TokenKind kind) { return kind == TokenKind::kControl || kind == TokenKind::kUserDefined; }

}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocab vocab) : vocab_(std::move(vocab)) {
  const std::string& where = vocab_.source;
  const size_t n = vocab_.tokens.size();
  check(n > 0, where, "empty vocabulary");
  check(n <= static_cast<size_t>(INT32_MAX), where, "vocabulary of ", n, " tokens is too large");
  check(vocab_.kinds.size() == n, where, "vocabulary has ", n, " tokens but ", vocab_.kinds.size(), " token types");
  for (const auto& [name, id] : {std::pair{"BOS", vocab_.bos}, {"EOS", vocab_.eos}, {"UNK", vocab_.unk}})
    check(id >= -1 && id < static_cast<int64_t>(n), where, name, " id ", id, " is outside the vocabulary of ", n);

  for (size_t id = 0; id < n; ++id) {
    const auto tid = static_cast<int32_t>(id);
    ids_.emplace(vocab_.tokens[id], tid);  // the first of duplicate texts wins
    const TokenKind kind = vocab_.kinds[id];
    if (is_literal(kind) || kind == TokenKind::kUnknown) {
      const auto flags = vocab_.added_flags.find(tid);
      specials_.add(vocab_.tokens[id], tid, kind == TokenKind::kUserDefined,
                    flags == vocab_.added_flags.end() ? AddedTokenFlags{} : flags->second);
    }
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = ids_.find(byte_to_unicode(static_cast<uint8_t>(b)));
    byte_ids_[b] = it == ids_.end() ? -1 : it->second;
  }
  merges_.reserve(vocab_.merges.size());
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const auto& [left, right] = vocab_.merges[rank];
    const auto l = ids_.find(left), r = ids_.find(right), m = ids_.find(left + right);
    check(!left.empty() && !right.empty() && l != ids_.end() && r != ids_.end() && m != ids_.end(), where, "merge ",
          rank, " '", left, " ", right, "' names a token that is not in the vocabulary");
    check(rank <= static_cast<size_t>(INT32_MAX), where, "too many merges");
    // A repeated pair keeps its first (best) rank, as in llama.cpp.
    merges_.emplace(pair_key(l->second, r->second), std::pair{static_cast<int32_t>(rank), m->second});
  }
  vocab_.merges.clear();  // only the id form is needed from here on
  pretokenizer_ = std::make_unique<Pretokenizer>(vocab_.pretokenize, where);
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  if (vocab_.ignore_merges) {
    if (const auto it = ids_.find(bytes_to_unicode(word)); it != ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  for (const char ch : word) {
    int32_t id = byte_ids_[static_cast<uint8_t>(ch)];
    if (id < 0) id = vocab_.unk;
    check(id >= 0, vocab_.source, "no token for byte ", static_cast<int>(static_cast<uint8_t>(ch)),
          " and no unknown token");
    ids.push_back(id);
  }
  merge_pairs(ids, [&](int32_t left, int32_t right) -> std::optional<PairMerge> {
    const auto it = merges_.find(pair_key(left, right));
    if (it == merges_.end()) return std::nullopt;
    return PairMerge{static_cast<double>(it->second.first), it->second.second};
  });
  out.insert(out.end(), ids.begin(), ids.end());
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  for (const auto& piece : specials_.split(text, parse_special)) {
    if (piece.id >= 0) {
      out.push_back(piece.id);
      continue;
    }
    for (const std::string& word : pretokenizer_->split(piece.text)) encode_word(word, out);
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (const int32_t id : ids) {
    check(id >= 0 && id < vocab_size(), vocab_.source, "token id ", id, " is outside the vocabulary of ",
          vocab_size());
    const std::string& piece = vocab_.tokens[id];
    // Literal tokens are their own text; so is a normal token outside the byte mapping (a malformed vocab).
    if (is_literal(vocab_.kinds[id]) || !unicode_to_bytes(piece, text)) text += piece;
  }
  return text;
}

std::vector<int32_t> BpeTokenizer::stop_ids() const {
  std::vector<int32_t> stops;
  if (vocab_.eos >= 0) stops.push_back(vocab_.eos);
  for (const char* name : {"<|im_end|>", "<|eot_id|>", "<|endoftext|>"}) {
    const auto it = ids_.find(name);
    if (it != ids_.end() && is_literal(vocab_.kinds[it->second]) &&
        std::find(stops.begin(), stops.end(), it->second) == stops.end())
      stops.push_back(it->second);
  }
  return stops;
}

}  // namespace fsvd
