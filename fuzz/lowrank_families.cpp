// libFuzzer target: family detection and loading of the low-rank families
// stored as a directory (Basis Sharing's config.json) or a file (SVD-LLM's
// whole-model pickle). The first byte picks which; the rest is written there.
// Marker 2 writes a safetensors directory (ASVD, LowRankArena, Palu): config.json up
// to the first NUL, model.safetensors after it; marker 3 likewise Dobi-SVD's
// config.json and remapping_weight.pt. A file (marker 1) may be Dobi-SVD's pickle.
// Any input must load or throw fsvd::Error.
#include <unistd.h>

#include <algorithm>
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
  const int marker = data[0] % 4;
  const bool as_directory = marker != 1;
  const std::string path = as_directory ? scratch() : scratch() + "/model.pt";
  std::filesystem::remove(scratch() + "/model.pt");
  std::filesystem::remove(scratch() + "/model.safetensors");
  std::filesystem::remove(scratch() + "/remapping_weight.pt");
  const char* body = reinterpret_cast<const char*>(data + 1);
  const char* end = body + (size - 1);
  const char* split = marker >= 2 ? std::find(body, end, '\0') : end;
  std::ofstream(as_directory ? scratch() + "/config.json" : path, std::ios::binary | std::ios::trunc)
      .write(body, split - body);
  if (split != end)
    std::ofstream(scratch() + (marker == 2 ? "/model.safetensors" : "/remapping_weight.pt"), std::ios::binary)
        .write(split + 1, end - split - 1);
  if (!as_directory) std::filesystem::remove(scratch() + "/config.json");
  try {
    fsvd::load_model(path);
  } catch (const fsvd::Error&) {
  }
  return 0;
}
