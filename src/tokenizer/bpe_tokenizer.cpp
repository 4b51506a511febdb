#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <climits>
#include <queue>

#include "core/error.h"
#include "tokenizer/byte_level.h"

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
    if (is_literal(kind) || kind == TokenKind::kUnknown)
      specials_.add(vocab_.tokens[id], tid, kind == TokenKind::kUserDefined);
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
  // One symbol per byte, linked so merged-away symbols are skipped in O(1).
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices, -1 at the ends
  };
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    int32_t id = byte_ids_[static_cast<uint8_t>(word[i])];
    if (id < 0) id = vocab_.unk;
    check(id >= 0, vocab_.source, "no token for byte ", static_cast<int>(static_cast<uint8_t>(word[i])),
          " and no unknown token");
    const auto idx = static_cast<int32_t>(i);
    sym.push_back({id, idx - 1, i + 1 < word.size() ? idx + 1 : -1});
  }

  struct Candidate {
    int32_t rank, left;  // rank of the merge, index of its left symbol
    int32_t left_id, right_id, merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](int32_t left) {
    if (left < 0 || sym[left].next < 0) return;
    const int32_t right = sym[left].next;
    const auto it = merges_.find(pair_key(sym[left].id, sym[right].id));
    if (it != merges_.end()) queue.push({it->second.first, left, sym[left].id, sym[right].id, it->second.second});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) push(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = sym[c.left];
    // Stale when either side has merged since the candidate was queued (a
    // symbol merged into its left neighbour has id -1).
    if (left.id != c.left_id || left.next < 0 || sym[left.next].id != c.right_id) continue;
    Symbol& right = sym[left.next];
    left.id = c.merged_id;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.left;
    push(left.prev);
    push(c.left);
  }
  for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
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
