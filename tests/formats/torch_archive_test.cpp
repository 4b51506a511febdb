#include "formats/torch_archive.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "testing/data_paths.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

using test::fails_with;
using testing::fixture;

// Written by tests/formats/make_torch_fixtures.py next to the archives.
const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream f(fixture("torch/expected.json"));
    return nlohmann::json::parse(f);
  }();
  return j;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Names, dtypes, shapes and values as the fixture script recorded them; with
// `layout`, also strides, storage keys and offsets (real torch may number
// storages differently).
void expect_matches(const TorchArchive& archive, const nlohmann::json& want, bool layout) {
  std::vector<std::string> want_names;
  for (const auto& [name, t] : want.items()) want_names.push_back(name);
  std::vector<std::string> names;
  for (const auto& [name, t] : archive.named_tensors()) names.push_back(name);
  EXPECT_EQ(names, want_names);
  for (const auto& [name, t] : want.items()) {
    if (!archive.contains(name)) continue;
    const TorchTensorInfo& info = archive.info(name);
    EXPECT_EQ(dtype_name(info.dtype), t["dtype"].get<std::string>()) << name;
    EXPECT_EQ(info.shape, t["shape"].get<std::vector<int64_t>>()) << name;
    if (layout) {
      EXPECT_EQ(info.strides, t["strides"].get<std::vector<int64_t>>()) << name;
      EXPECT_EQ(info.storage_key, t["storage_key"].get<std::string>()) << name;
      EXPECT_EQ(info.offset, t["offset"].get<int64_t>()) << name;
    }
    if (t["values"].is_null()) {
      EXPECT_TRUE(fails_with([&] { archive.load_f32(name); }, "'" + name + "' is not contiguous"));
      continue;
    }
    const Tensor loaded = archive.load_f32(name);
    EXPECT_EQ(loaded.shape(), info.shape) << name;
    const auto values = t["values"].get<std::vector<float>>();
    ASSERT_EQ(static_cast<size_t>(loaded.numel()), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(loaded.data()[i], values[i]) << name << "[" << i << "]";
  }
}

TEST(TorchArchive, ReadsAStateDictOfEveryFloatDtype) {
  const TorchArchive archive(fixture("torch/state_dict.pt"));
  expect_matches(archive, expected()["state_dict.pt"], true);
  // Two views of one storage, the second at a non-zero offset.
  EXPECT_EQ(archive.info("shared_a").storage_key, archive.info("shared_b").storage_key);
  EXPECT_EQ(archive.info("shared_b").offset, 5);
  EXPECT_TRUE(fails_with([&] { archive.load_f32("nope"); }, "state_dict.pt: no tensor named 'nope'"));
}

TEST(TorchArchive, NamesTheTensorsOfAWholeModelPickle) {
  const TorchArchive archive(fixture("torch/svd_llm_model.pt"));
  expect_matches(archive, expected()["svd_llm_model.pt"], true);
  EXPECT_TRUE(archive.contains("model.layers.0.self_attn.q_u_proj.weight"));
  EXPECT_TRUE(archive.contains("model.layers.0.mlp.down_v_proj.weight"));
  EXPECT_TRUE(archive.contains("lm_head.weight"));
  EXPECT_EQ(archive.info("model.layers.0.mlp.down_v_proj.weight").shape, (std::vector<int64_t>{3, 10}));
  EXPECT_FALSE(archive.contains("model.layers.0.self_attn.rotary_emb.inv_freq")) << "a non-persistent buffer";
}

TEST(TorchArchive, ReadsTheSameFromMemory) {
  const auto bytes = file_bytes(fixture("torch/svd_llm_model.pt"));
  const TorchArchive archive(bytes.data(), bytes.size(), "mem.pt");
  expect_matches(archive, expected()["svd_llm_model.pt"], true);
}

// Real torch.save output, written by the fixture script where torch is installed.
TEST(TorchArchive, RealTorchSaveFilesMatchTheImitations) {
  const std::string real = fixture("torch/real");
  if (!std::filesystem::exists(real + "/state_dict.pt")) {
    GTEST_SKIP() << real << " is absent: run tests/formats/make_torch_fixtures.py where torch is installed";
  }
  for (const char* file : {"state_dict.pt", "svd_llm_model.pt"}) {
    SCOPED_TRACE(file);
    expect_matches(TorchArchive(real + "/" + file), expected()[file], false);
  }
}

TEST(TorchArchive, RefusesHostileAndBrokenArchives) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"evil_os_system.pt", "data.pkl holds an object of class os.system, not a state dict or a module"},
      {"evil_eval_in_state_dict.pt", "entry 'x' is an object of class builtins.eval"},
      {"evil_popen_parameter.pt", "'weight' in _parameters is a object of class subprocess.Popen"},
      {"evil_reduce_chain.pt", "callable is object of class builtins.getattr, not a global name"},
      {"memo_out_of_range.pt", "memo index 7 was never stored"},
      {"deep_marks.pt", "MARKs nest deeper than 1000"},
      {"deep_dicts.pt", "nests deeper than 256 levels"},
      {"storage_offset_past_end.pt", "tensor 'w': elements up to index 9 (storage offset 6) run past the end"},
      {"storage_size_mismatch.pt", "holds 5 F32 values but the pickle declares 8"},
      {"legacy.pt", "legacy torch format"},
  };
  for (const auto& [file, needle] : cases) {
    EXPECT_TRUE(fails_with([&] { TorchArchive archive(fixture(std::string("torch/") + file)); }, needle)) << file;
  }
  // Rename data.pkl (in the local and the central header) to leave a zip that is not a torch archive.
  auto renamed = file_bytes(fixture("torch/state_dict.pt"));
  const std::string pkl = "state_dict/data.pkl";
  for (auto it = renamed.begin(); (it = std::search(it, renamed.end(), pkl.begin(), pkl.end())) != renamed.end();) {
    it += static_cast<std::ptrdiff_t>(pkl.size());
    it[-1] = 'x';
  }
  EXPECT_TRUE(fails_with([&] { TorchArchive(renamed.data(), renamed.size(), "renamed.zip"); },
                         "renamed.zip: no <archive>/data.pkl entry"));
  EXPECT_TRUE(fails_with([&] { TorchArchive(fixture("torch/absent.pt")); }, "absent.pt"));
}

// Truncations and random corruptions: an Error or tensors that load, never a crash.
TEST(TorchArchive, SurvivesTruncationAndCorruption) {
  const auto good = file_bytes(fixture("torch/state_dict.pt"));
  auto try_load = [](const std::vector<uint8_t>& bytes) {
    try {
      const TorchArchive archive(bytes.data(), bytes.size(), "bad.pt");
      for (const auto& [name, info] : archive.named_tensors()) {
        try {
          archive.load_f32(name);
        } catch (const Error&) {  // non-contiguous
        }
      }
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  for (size_t n = 0; n + 3 < good.size(); n += 7) EXPECT_FALSE(try_load({good.begin(), good.begin() + n})) << n;
  std::mt19937 rng(31);
  for (int trial = 0; trial < 3000; ++trial) {
    auto bad = good;
    bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    try_load(bad);
  }
}

}  // namespace
}  // namespace fsvd
