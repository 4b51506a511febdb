#include "fixture_files.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "families/load.h"
#include "families/native_family.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "testing/data_paths.h"

namespace fsvd::test {

namespace fs = std::filesystem;

namespace {

std::vector<float> cpu_logits(const Model& m) {
  std::vector<int32_t> tokens(11);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 5 + 2) % m.config.vocab);
  CpuExecutor ex(m, static_cast<int>(tokens.size()), 1);
  std::vector<float> logits;
  ex.forward(tokens, 0, true, logits);
  return logits;
}

}  // namespace

std::string family_fixture(const std::string& family, const std::string& file) {
  const std::string dir = testing::fixture("families/" + family);
  return file.empty() ? dir : dir + "/" + file;
}

void copy_family_fixture(const std::string& family, const TempDir& dir) {
  for (const auto& e : fs::directory_iterator(family_fixture(family)))
    if (e.is_regular_file()) fs::copy_file(e.path(), dir.file(e.path().filename().string()));  // not upstream/
}

void drop_tensor(const std::string& safetensors_path, const std::string& name) {
  std::vector<SafetensorsEntry> kept;
  std::map<std::string, std::string> metadata;
  {
    const SafetensorsFile file(safetensors_path);
    ASSERT_TRUE(file.contains(name)) << name;
    for (const std::string& n : file.names())
      if (n != name) kept.push_back({n, file.load_f32(n), file.raw(n).dtype});
    metadata = file.metadata();
  }
  write_safetensors(safetensors_path, kept, metadata);
}

void expect_native_round_trip_bit_identical(const Model& model) {
  const TempDir dir("family_native");
  save_native(model, dir.path());
  EXPECT_EQ(detect_family(dir.path()), "native");
  const Model back = load_model(dir.path());
  expect_same_model(back, model);
  const std::vector<float> a = cpu_logits(model), b = cpu_logits(back);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "logits differ";
}

}  // namespace fsvd::test
