// libFuzzer: encode arbitrary bytes with a byte-complete BPE and a byte-fallback
// llama2.c-style vocabulary; decode must give the bytes back exactly.
#include <cstdint>
#include <memory>
#include <string>
#include <cstdio>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/scored_tokenizer.h"

namespace {

// Every byte, a few merges over common letters and spaces, two control tokens.
std::unique_ptr<fsvd::Tokenizer> make_bpe() {
  fsvd::BpeVocab v;
  v.source = "fuzz-bpe";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(fsvd::byte_to_unicode(static_cast<uint8_t>(b)));
  const std::string sp = fsvd::byte_to_unicode(' ');
  const std::pair<std::string, std::string> merges[] = {
      {"t", "h"}, {"th", "e"}, {sp, "the"}, {sp, sp}, {sp + sp, sp + sp}, {"e", "r"}, {"1", "2"},
      {fsvd::byte_to_unicode(0xC3), fsvd::byte_to_unicode(0xA9)}};
  for (const auto& [l, r] : merges) {
    v.merges.emplace_back(l, r);
    v.tokens.push_back(l + r);
  }
  v.tokens.push_back("<|im_start|>");
  v.tokens.push_back("<|im_end|>");
  v.kinds.assign(v.tokens.size(), fsvd::TokenKind::kNormal);
  v.kinds[v.kinds.size() - 1] = v.kinds[v.kinds.size() - 2] = fsvd::TokenKind::kControl;
  v.pretokenize = fsvd::pretokenize_steps_for("smollm", "fuzz-bpe");
  v.eos = static_cast<int32_t>(v.tokens.size()) - 1;
  return std::make_unique<fsvd::BpeTokenizer>(std::move(v));
}

// <unk>, BOS, EOS, 256 byte pieces, then scored pieces.
std::unique_ptr<fsvd::Tokenizer> make_scored() {
  fsvd::ScoredVocab v;
  v.source = "fuzz-scored";
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.kinds = {fsvd::TokenKind::kUnknown, fsvd::TokenKind::kControl, fsvd::TokenKind::kControl};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    v.pieces.push_back(hex);
    v.kinds.push_back(fsvd::TokenKind::kByte);
  }
  for (const char* p : {" ", "a", "b", "ab", " a", " ab", "ba", "aba", "\xC3\xA9", " \xC3\xA9"}) {
    v.pieces.push_back(p);
    v.kinds.push_back(fsvd::TokenKind::kNormal);
  }
  v.scores.resize(v.pieces.size());
  for (size_t i = 0; i < v.scores.size(); ++i) v.scores[i] = -static_cast<float>(i % 7);
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  return std::make_unique<fsvd::ScoredTokenizer>(std::move(v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto bpe = make_bpe();
  static const auto scored = make_scored();
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Without special-token parsing every byte is ordinary text: exact round trips.
  if (bpe->decode(bpe->encode(text, false)) != text) __builtin_trap();
  // run.c groups the dummy-prefix space with leading continuation bytes into
  // raw bytes, so such (invalid UTF-8) text comes back with that space.
  const bool leading_continuation = !text.empty() && (static_cast<uint8_t>(text[0]) & 0xC0) == 0x80;
  if (!leading_continuation && scored->decode(scored->encode(text, true)) != text) __builtin_trap();
  // With it, control tokens may appear; the ids must still be valid.
  for (const auto* tok : {bpe.get(), scored.get()}) {
    for (const int32_t id : tok->encode(text, true, true))
      if (id < 0 || id >= tok->vocab_size()) __builtin_trap();
  }
  return 0;
}
