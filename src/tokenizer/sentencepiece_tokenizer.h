#pragma once
// SentencePiece .model files through libsentencepiece (Llama-2's tokenizer.model).
#include <memory>
#include <string>

#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace fsvd {

class SentencePieceTokenizer : public Tokenizer {
 public:
  // Throws Error naming the path. `chat_template`: the model's, when known (tokenizer_config.json).
  explicit SentencePieceTokenizer(const std::string& model_path, std::string chat_template = {});
  ~SentencePieceTokenizer() override;

  // With parse_special, control pieces spelled in text ("<s>", "</s>") become
  // their ids and the text between them is encoded piece by piece, each with
  // SentencePiece's dummy prefix (as Meta's Llama-2 chat code encodes turns).
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false) const override;
  // SentencePiece's own decode: control tokens vanish, the leading dummy-prefix space is dropped.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;
  std::string chat_template() const override { return chat_template_; }

 private:
  std::string path_;
  std::string chat_template_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  SpecialTokenMatcher specials_;
};

}  // namespace fsvd
