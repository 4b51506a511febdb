#pragma once
// A tokenizer without files, for tests and fuzz targets: one id per byte
// (ids 0..255), then BOS 256, EOS 257, and a ChatML template, so text,
// chat messages and any bytes round-trip.
#include "tokenizer/tokenizer.h"

namespace fsvd::testing {

class ByteTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = false) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override { return 258; }
  int32_t bos_id() const override { return 256; }
  int32_t eos_id() const override { return 257; }
  std::string chat_template() const override;
};

}  // namespace fsvd::testing
