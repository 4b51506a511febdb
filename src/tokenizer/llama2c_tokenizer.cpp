#include "tokenizer/llama2c_tokenizer.h"

#include <cstring>

#include "core/error.h"
#include "core/mapped_file.h"

namespace fsvd {
namespace {

constexpr int32_t kBos = 1, kEos = 2;  // fixed by run.c

template <typename T>
T read_at(const uint8_t* bytes, size_t size, size_t& pos, const std::string& where, const char* what, size_t token) {
  check(size - pos >= sizeof(T), where, "truncated: ", what, " of token ", token, " at offset ", pos, " needs ",
        sizeof(T), " bytes, ", size - pos, " left");
  T v;
  std::memcpy(&v, bytes + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}

}  // namespace

std::unique_ptr<ScoredTokenizer> parse_llama2c_tokenizer(const uint8_t* bytes, size_t size, const std::string& name) {
  check(size >= 4, name, "too small for a llama2.c tokenizer (", size, " bytes)");
  int32_t max_len;
  std::memcpy(&max_len, bytes, 4);
  check(max_len > 0, name, "max_token_length ", max_len, " is not positive");

  ScoredVocab v;
  v.source = name;
  v.bos = kBos;
  v.eos = kEos;
  for (size_t pos = 4; pos < size;) {
    const size_t token = v.pieces.size();
    const auto score = read_at<float>(bytes, size, pos, name, "score", token);
    const auto len = read_at<int32_t>(bytes, size, pos, name, "length", token);
    check(len >= 0 && len <= max_len, name, "token ", token, " at offset ", pos - 4, " has length ", len,
          " outside [0, max_token_length ", max_len, "]");
    check(size - pos >= static_cast<size_t>(len), name, "truncated: token ", token, " needs ", len, " bytes at offset ",
          pos, ", ", size - pos, " left");
    v.pieces.emplace_back(reinterpret_cast<const char*>(bytes + pos), static_cast<size_t>(len));
    v.scores.push_back(score);
    pos += static_cast<size_t>(len);
  }
  check(v.pieces.size() > kEos, name, "only ", v.pieces.size(), " tokens: BOS (1) and EOS (2) are missing");
  // The format has no token types; they follow from run.c's conventions
  // (<0xXX> byte pieces are recognised by their text).
  v.kinds.assign(v.pieces.size(), TokenKind::kNormal);
  v.kinds[kBos] = v.kinds[kEos] = TokenKind::kControl;
  if (v.pieces[0] == "<unk>") {
    v.kinds[0] = TokenKind::kUnknown;
    v.unk = 0;
  }
  return std::make_unique<ScoredTokenizer>(std::move(v));
}

std::unique_ptr<ScoredTokenizer> load_llama2c_tokenizer(const std::string& path) {
  const MappedFile file(path);
  return parse_llama2c_tokenizer(file.data(), file.size(), path);
}

}  // namespace fsvd
