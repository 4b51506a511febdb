// libFuzzer: llama2.c tokenizer.bin parser, then encode/decode with whatever parsed.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "tokenizer/llama2c_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tok = fsvd::parse_llama2c_tokenizer(data, size, "fuzz.bin");
    const std::string text = "Once upon a time, \xE4\xB8\xAD 42\n\xFF";
    const auto ids = tok->encode(text, true, true);
    for (const int32_t id : ids)
      if (id < 0 || id >= tok->vocab_size()) __builtin_trap();
    tok->decode(ids);
    std::vector<int32_t> all;
    for (int32_t id = 0; id < tok->vocab_size() && id < 4096; ++id) all.push_back(id);
    tok->decode(all);
  } catch (const fsvd::Error&) {
  }
  return 0;
}
