// libFuzzer target for the GGUF reader: any input must parse or throw
// fsvd::Error; every tensor it accepts must be readable in full.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "formats/gguf.h"

namespace {

constexpr size_t kMaxDequantBytes = 1 << 20;  // keeps each run fast

// Reads every byte a tensor claims, so ASan sees any out-of-bounds span.
uint8_t touch(const uint8_t* p, size_t n) {
  uint8_t acc = 0;
  for (size_t i = 0; i < n; ++i) acc ^= p[i];
  return acc;
}

void touch_value(const std::string& key, const fsvd::GgufValue& value) {
  if (value.is_array()) {
    for (const fsvd::GgufValue& item : value.as_array(key)) touch_value(key, item);
  } else if (value.is_string()) {
    touch(reinterpret_cast<const uint8_t*>(value.as_string(key).data()), value.as_string(key).size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fsvd::GgufFile file(data, size, "fuzz.gguf");
    for (const auto& [key, value] : file.metadata()) touch_value(key, value);
    volatile uint8_t sink = 0;
    for (const fsvd::GgufTensorInfo& t : file.tensors()) {
      sink = sink ^ touch(t.data, t.nbytes);
      if (t.nbytes <= kMaxDequantBytes) file.load_f32(t.name);
    }
  } catch (const fsvd::Error&) {
  }
  return 0;
}
