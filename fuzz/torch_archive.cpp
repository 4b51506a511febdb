// libFuzzer target for the torch.save archive reader (zip + unpickler + tree
// walk): any input must load or throw fsvd::Error; every tensor it accepts
// must be readable.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "formats/torch_archive.h"

namespace {
constexpr int64_t kMaxConvertElements = 1 << 18;  // keeps each run fast
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fsvd::TorchArchive archive(data, size, "fuzz.pt");
    for (const auto& [name, info] : archive.named_tensors()) {
      int64_t numel = 1;
      for (int64_t d : info.shape) numel = d > kMaxConvertElements ? kMaxConvertElements + 1 : numel * d;
      if (numel > kMaxConvertElements) continue;
      try {
        archive.load_f32(name);
      } catch (const fsvd::Error&) {  // integer dtypes and non-contiguous tensors are refused
      }
    }
  } catch (const fsvd::Error&) {
  }
  return 0;
}
