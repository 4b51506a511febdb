#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "core/error.h"

namespace fsvd {

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path, std::string chat_template)
    : path_(model_path),
      chat_template_(std::move(chat_template)),
      sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = sp_->Load(model_path);
  check(status.ok(), model_path, "cannot load SentencePiece model: ", status.ToString());
  for (int id = 0; id < sp_->GetPieceSize(); ++id)
    if (sp_->IsControl(id)) specials_.add(sp_->IdToPiece(id), id, false);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && bos_id() >= 0) out.push_back(bos_id());
  std::vector<int> ids;
  for (const auto& piece : specials_.split(text, parse_special)) {
    if (piece.id >= 0) {
      out.push_back(piece.id);
      continue;
    }
    const auto status = sp_->Encode(piece.text, &ids);
    check(status.ok(), path_, "SentencePiece encode failed: ", status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids) const {
  for (const int32_t id : ids)
    check(id >= 0 && id < vocab_size(), path_, "token id ", id, " is outside the vocabulary of ", vocab_size());
  std::string text;
  const auto status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  check(status.ok(), path_, "SentencePiece decode failed: ", status.ToString());
  return text;
}

int32_t SentencePieceTokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int32_t SentencePieceTokenizer::bos_id() const { return sp_->bos_id(); }
int32_t SentencePieceTokenizer::eos_id() const { return sp_->eos_id(); }

}  // namespace fsvd
