// libFuzzer target: family detection and loading of the low-rank families
// stored as a directory (Basis Sharing's config.json) or a file (SVD-LLM's
// whole-model pickle). The first byte picks which; the rest is written there.
// Any input must load or throw fsvd::Error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "families/load.h"

namespace {

const std::string& scratch() {
  static const std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fuzz_lowrank_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    return tmpl;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool as_directory = data[0] % 2 == 0;
  const std::string path = as_directory ? scratch() : scratch() + "/model.pt";
  std::filesystem::remove(scratch() + "/model.pt");
  std::ofstream(as_directory ? scratch() + "/config.json" : path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  if (!as_directory) std::filesystem::remove(scratch() + "/config.json");
  try {
    fsvd::load_model(path);
  } catch (const fsvd::Error&) {
  }
  return 0;
}
