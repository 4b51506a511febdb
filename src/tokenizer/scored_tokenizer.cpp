#include "tokenizer/scored_tokenizer.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/error.h"
#include "tokenizer/pair_merge.h"

namespace fsvd {
namespace {

// Byte value of a "<0xXX>" piece, -1 for any other text.
int byte_piece_value(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = piece[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

bool is_continuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

}  // namespace

ScoredTokenizer::ScoredTokenizer(ScoredVocab vocab) : vocab_(std::move(vocab)) {
  const std::string& where = vocab_.source;
  const size_t n = vocab_.pieces.size();
  check(n > 0, where, "empty vocabulary");
  check(n <= static_cast<size_t>(INT32_MAX), where, "vocabulary of ", n, " tokens is too large");
  check(vocab_.scores.size() == n && vocab_.kinds.size() == n, where, "vocabulary has ", n, " pieces but ",
        vocab_.scores.size(), " scores and ", vocab_.kinds.size(), " token types");
  for (const auto& [name, id] : {std::pair{"BOS", vocab_.bos}, {"EOS", vocab_.eos}, {"UNK", vocab_.unk}})
    check(id >= -1 && id < static_cast<int64_t>(n), where, name, " id ", id, " is outside the vocabulary of ", n);

  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  piece_byte_.assign(n, -1);
  for (size_t id = 0; id < n; ++id) {
    const auto tid = static_cast<int32_t>(id);
    const std::string& piece = vocab_.pieces[id];
    check(std::isfinite(vocab_.scores[id]), where, "score of token ", id, " is not finite");
    const TokenKind kind = vocab_.kinds[id];
    // Byte pieces are recognised by their text, as run.c does, whatever their
    // recorded kind; text never merges into one (SentencePiece's behaviour).
    const int byte = kind == TokenKind::kControl ? -1 : byte_piece_value(piece);
    check(kind != TokenKind::kByte || byte >= 0, where, "byte token ", id, " '", piece,
          "' is not of the form <0xXX>");
    if (byte >= 0) {
      piece_byte_[id] = static_cast<int16_t>(byte);
      if (byte_ids_[byte] < 0) byte_ids_[byte] = tid;
    } else if (kind == TokenKind::kNormal || kind == TokenKind::kUserDefined) {
      ids_.emplace(piece, tid);  // the first of duplicate texts wins
    } else if (kind == TokenKind::kControl) {
      // llama2.c's export wraps BOS/EOS in newlines ("\n<s>\n"); the tag itself is what text spells.
      const size_t b = piece.find_first_not_of('\n'), e = piece.find_last_not_of('\n');
      if (b != std::string::npos) specials_.add(piece.substr(b, e - b + 1), tid, false);
    }
  }
}

void ScoredTokenizer::encode_text(std::string_view raw, std::vector<int32_t>& out) const {
  if (raw.empty()) return;
  const std::string text = vocab_.add_dummy_prefix ? " " + std::string(raw) : std::string(raw);

  std::vector<int32_t> ids;
  // One symbol per UTF-8 character (a lead byte and at most three continuation
  // bytes, as run.c groups them); raw bytes when the character is not a piece.
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (len < 4 && i + len < text.size() && is_continuation(text[i + len])) ++len;
    const auto it = ids_.find(text.substr(i, len));
    if (it != ids_.end()) {
      ids.push_back(it->second);
    } else {
      for (size_t k = i; k < i + len; ++k) {
        int32_t id = byte_ids_[static_cast<uint8_t>(text[k])];
        if (id < 0) id = vocab_.unk;
        check(id >= 0, vocab_.source, "no piece for byte ", static_cast<int>(static_cast<uint8_t>(text[k])),
              " and no unknown token");
        ids.push_back(id);
      }
    }
    i += len;
  }

  // Highest score first, then leftmost: run.c's scan with a strict '>'.
  merge_pairs(ids, [&](int32_t left, int32_t right) -> std::optional<PairMerge> {
    if (piece_byte_[left] >= 0 || piece_byte_[right] >= 0) return std::nullopt;  // raw bytes never merge
    const auto it = ids_.find(vocab_.pieces[left] + vocab_.pieces[right]);
    if (it == ids_.end()) return std::nullopt;
    return PairMerge{-static_cast<double>(vocab_.scores[it->second]), it->second};
  });
  out.insert(out.end(), ids.begin(), ids.end());
}

std::vector<int32_t> ScoredTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  // Text between special tokens is encoded on its own, dummy prefix included,
  // as Meta's Llama-2 chat code encodes each turn.
  for (const auto& piece : specials_.split(text, parse_special)) {
    if (piece.id >= 0) {
      out.push_back(piece.id);
    } else {
      encode_text(piece.text, out);
    }
  }
  return out;
}

std::string ScoredTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  bool after_bos = false;
  for (const int32_t id : ids) {
    check(id >= 0 && id < vocab_size(), vocab_.source, "token id ", id, " is outside the vocabulary of ",
          vocab_size());
    if (vocab_.kinds[id] == TokenKind::kControl) {
      after_bos = id == vocab_.bos;
      continue;
    }
    const std::string& piece = vocab_.pieces[id];
    if (piece_byte_[id] >= 0) {
      text += static_cast<char>(piece_byte_[id]);
    } else {
      text.append(piece, after_bos && !piece.empty() && piece[0] == ' ' ? 1 : 0);
    }
    after_bos = false;
  }
  return text;
}

}  // namespace fsvd
