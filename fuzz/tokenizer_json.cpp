// libFuzzer: Hugging Face tokenizer.json parser, then encode/decode with whatever parsed.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "tokenizer/load_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string_view json(reinterpret_cast<const char*>(data), size);
    const auto tok = fsvd::tokenizer_from_json(json, "", "fuzz.json");
    const auto ids = tok->encode("hello world <|im_start|> 12345\n\xC3\xA9\xFF", true, true);
    for (const int32_t id : ids)
      if (id < 0 || id >= tok->vocab_size()) __builtin_trap();
    tok->decode(ids);
  } catch (const fsvd::Error&) {
  }
  return 0;
}
