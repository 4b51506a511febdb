// libFuzzer target: the encoder config.json parser (BERT, RoBERTa, DistilBERT)
// on arbitrary text. Any input must either parse to a validated config or throw fsvd::Error.
#include "families/encoder_config.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fsvd::parse_encoder_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
  } catch (const fsvd::Error&) {
  }
  return 0;
}
