#pragma once
// flashsvd.json, the metadata of a native model directory (beside
// model.safetensors): the full config, every linear (dense or low-rank, its
// tensors by name, its rank), and the tensors several owners share. Parsing
// checks everything that can be checked without the tensors; the loader
// checks the tensors against it.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "model/config.h"

namespace fsvd {

constexpr const char* kNativeFormat = "flashsvd-native";
constexpr int kNativeVersion = 1;
constexpr const char* kNativeManifestFile = "flashsvd.json";
constexpr const char* kNativeWeightsFile = "model.safetensors";

struct NativeLinear {
  std::string first;                       // tensor name in model.safetensors
  int64_t row_begin = -1, row_end = -1;    // the rows of `first` it uses; -1: all of them
  std::string second;                      // empty: dense
  std::string bias;                        // empty: none
  int64_t rank = -1;                       // -1: dense

  bool has_rows() const { return row_begin >= 0; }
};

struct NativeLayer {
  std::string attn_norm, mlp_norm;
  // q, k, v, o, gate, up, down (kLinearNames order). q|k|v and gate|up use
  // consecutive rows of one packed first-factor tensor each.
  std::array<NativeLinear, 7> linears;
};

// The names of a layer's linears, in NativeLayer::linears order.
extern const std::array<const char*, 7> kLinearNames;

// The linears (indices into NativeLayer::linears) whose first factors are
// stacked into one tensor, in Model::pack()'s order: q|k|v, then gate|up.
struct NativePackGroup {
  const char* name;
  std::vector<int> members;
};
extern const std::array<NativePackGroup, 2> kPackGroups;

// A tensor referenced from more than one owner (a layer, or embed / lm_head):
// a basis shared by several layers, tied embeddings.
struct NativeSharedTensor {
  std::string tensor;
  std::vector<std::string> users;  // references, e.g. "layers.3.q.first"
};

struct NativeManifest {
  ModelConfig config;
  DType dtype = DType::F32;  // of every matrix; vectors (norms, biases) are F32
  std::string source_family, source_path;
  nlohmann::json provenance = nlohmann::json::object();  // free-form, e.g. compressor settings
  std::string embed, final_norm;
  NativeLinear lm_head;
  std::vector<NativeLayer> layers;
};

// Every tensor referenced from more than one owner, in order of first reference.
std::vector<NativeSharedTensor> shared_tensors(const NativeManifest& m);

// The file's text (with the derived "shared" list).
std::string native_manifest_json(const NativeManifest& m);

// Parses and validates; throws Error naming `where` and the offending entry.
NativeManifest parse_native_manifest(std::string_view text, const std::string& where);

}  // namespace fsvd
