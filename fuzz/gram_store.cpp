// libFuzzer target: `flashsvd compress --stats` files (compress/gram_store.h)
// read against a fixed key (the seed corpus holds a valid file for it). Any
// input must read or throw fsvd::Error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "compress/gram_store.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("fuzz_gram_store_" + std::to_string(getpid()))).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  fsvd::GramStoreKey key;
  key.layers = 2;
  key.dims = {3};
  key.tokens = 5;
  key.window = 4;
  key.fingerprint = 7;
  try {
    fsvd::GramStoreReader reader(path, key);
    for (int32_t l = 0; l < key.layers; ++l)
      if (reader.layer(l).size() != key.dims.size()) std::abort();
  } catch (const fsvd::Error&) {
  }
  return 0;
}
