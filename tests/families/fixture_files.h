#pragma once
// What the low-rank family tests do alike with their fixture directories
// (tests/fixtures/families/*): writable copies, edits of config.json and of
// the safetensors files, and the round trip through the native format.
#include <string>

#include <nlohmann/json.hpp>

#include "core/read_file.h"
#include "family_test_util.h"
#include "model/model.h"

namespace fsvd::test {

// tests/fixtures/families/<family>/<file> ("" for the directory).
std::string family_fixture(const std::string& family, const std::string& file = "");

// Copies every file of the `family` fixture directory into `dir`.
void copy_family_fixture(const std::string& family, const TempDir& dir);

// Applies `edit` to `dir`/config.json.
template <typename Edit>
void edit_config(const TempDir& dir, Edit edit) {
  nlohmann::json config = nlohmann::json::parse(read_file(dir.file("config.json")));
  edit(config);
  dir.write("config.json", config.dump(2));
}

// Rewrites a safetensors file without tensor `name`, keeping the other tensors, dtypes and metadata.
void drop_tensor(const std::string& safetensors_path, const std::string& name);

// `flashsvd convert`'s path: save_native, load it back; tensors and CPU logits bit for bit.
void expect_native_round_trip_bit_identical(const Model& model);

}  // namespace fsvd::test
