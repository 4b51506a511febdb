#pragma once
// Text <-> token ids. Implementations: llama2.c, SentencePiece, byte-level BPE.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fsvd {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of `text`; special tokens written literally in text (e.g.
  // "<|im_start|>") are recognised when `parse_special`. BOS is prepended when
  // add_bos and the tokenizer has one.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos,
                                      bool parse_special = false) const = 0;
  // Exact bytes of a token sequence (inverse of encode for ordinary text).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  // Ids that end generation (EOS and, for chat models, end-of-turn tokens).
  virtual std::vector<int32_t> stop_ids() const { return {eos_id()}; }
  // True when encode() should add BOS by default (model-specific).
  virtual bool adds_bos() const { return bos_id() >= 0; }
  // The model's chat template source (Jinja), empty when none is known.
  virtual std::string chat_template() const { return {}; }
};

// Turns a growing token sequence into text chunks, emitting only complete
// UTF-8 and handling tokenizers whose pieces depend on their neighbours.
// Each push decodes only a short window (the tokens since the last emitted
// chunk plus the ones before it, as context), so a long generation costs
// linear, not quadratic, time.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok) : tok_(tok) {}
  // Text that became final after appending `id`.
  std::string push(int32_t id);
  // Whatever remains (possibly incomplete UTF-8) at the end.
  std::string flush();

 private:
  std::string decode_range(size_t begin, size_t end) const;

  const Tokenizer& tok_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // window start: context for the next chunk
  size_t read_offset_ = 0;    // tokens before this are emitted
};

}  // namespace fsvd
