// libFuzzer target for the safetensors reader: any input must parse or throw
// fsvd::Error; every tensor it accepts must be readable in full.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "formats/safetensors.h"

namespace {

constexpr size_t kMaxConvertBytes = 1 << 20;  // keeps each run fast

// Reads every byte a tensor claims, so ASan sees any out-of-bounds span.
uint8_t touch(const uint8_t* p, size_t n) {
  uint8_t acc = 0;
  for (size_t i = 0; i < n; ++i) acc ^= p[i];
  return acc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fsvd::SafetensorsFile file(data, size, "fuzz.safetensors");
    volatile uint8_t sink = 0;
    for (const std::string& name : file.names()) {
      const fsvd::RawTensor& t = file.raw(name);
      sink = sink ^ touch(t.data, t.nbytes);
      if (t.nbytes > kMaxConvertBytes) continue;
      try {
        file.load_f32(name);
      } catch (const fsvd::Error&) {  // integer dtypes are refused; keep touching the rest
      }
    }
  } catch (const fsvd::Error&) {
  }
  return 0;
}
