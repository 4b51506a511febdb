#pragma once
// flashsvd's own format: a directory holding the unified model as it is in
// memory after loading (q/k rows in rotate_half order, q|k|v and gate|up first
// factors packed), written by `flashsvd convert` and the compressors:
//   model.safetensors  every distinct tensor once (shared bases, tied
//                      embeddings), matrices in the chosen dtype, vectors F32
//   flashsvd.json      config, linears and shared tensors (native_manifest.h)
// Loading maps the file and takes the packs as stored: no re-layout, no
// re-packing. The tokenizer, when there is one, sits beside them under the
// names load_tokenizer looks for in a directory.
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "families/native_manifest.h"
#include "model/model.h"

namespace fsvd {

struct NativeSaveOptions {
  DType dtype = DType::F32;  // F32 | F16 | BF16 for matrices (norms and biases stay F32)
  nlohmann::json provenance = nlohmann::json::object();  // e.g. compressor settings
};

// Writes `model` into `dir` (created if missing; the files it writes are
// replaced). Throws Error naming the directory or file.
void save_native(const Model& model, const std::string& dir, const NativeSaveOptions& options = {});

// Family::mismatch: "" when `path` is a directory with a flashsvd.json.
std::string native_mismatch(const std::string& path);

// Validated and packed, like every family loader; throws Error naming the
// file for corrupt or inconsistent metadata and tensors.
Model load_native(const std::string& path);

// The parsed, validated flashsvd.json of `dir` (no tensors read).
NativeManifest read_native_manifest(const std::string& dir);

}  // namespace fsvd
