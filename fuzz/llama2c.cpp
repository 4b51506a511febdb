// libFuzzer target: the llama2.c reader and family on arbitrary bytes. Any
// input must either load or throw fsvd::Error: no crash, no UB, no huge allocation.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "families/llama2c_family.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fsvd::Llama2cFile file(data, size, "fuzz.bin");
    // A file that parses is exactly as large as its tensors, so loading is bounded by the input size.
    fsvd::llama2c_to_model(file);
  } catch (const fsvd::Error&) {
  }
  return 0;
}
