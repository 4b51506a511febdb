// libFuzzer target: the native format's flashsvd.json parser on arbitrary text.
// Any input must either parse to a validated manifest or throw fsvd::Error; an
// accepted manifest must write back to text that parses to the same manifest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "families/native_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const fsvd::NativeManifest m = fsvd::parse_native_manifest(text, "fuzz/flashsvd.json");
    const std::string again = fsvd::native_manifest_json(m);
    if (fsvd::native_manifest_json(fsvd::parse_native_manifest(again, "fuzz/rewritten.json")) != again) std::abort();
  } catch (const fsvd::Error&) {
  }
  return 0;
}
