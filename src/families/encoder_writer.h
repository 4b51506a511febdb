#pragma once
// Writes an encoder (dense, or with factored layer linears as `flashsvd
// compress` makes them) as a Hugging Face / sentence-transformers directory
// that load_encoder reads back: the same layout as the encoder it came from,
// so `embed`, `classify`, `serve` and `info` take it like any encoder.
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "model/encoder.h"

namespace fsvd {

constexpr const char* kEncoderProvenanceFile = "flashsvd_compression.json";

// Copies every file of `source_dir` except weights and the model card
// (config.json, tokenizer, sentence-transformers modules), then writes
// model.safetensors (transformers' names; a factored linear in the ABLinear
// layout, encoder_names.h) into the Transformer module's directory, and
// `provenance` (when not empty) as flashsvd_compression.json. The linears'
// matrices and the embedding tables are stored as `matrices` (F32, F16 or
// BF16), biases and LayerNorms as F32. `out` is created if missing; files it
// writes are replaced. Throws Error naming the path.
void save_encoder(const EncoderModel& model, const std::string& source_dir, const std::string& out,
                  const nlohmann::json& provenance, DType matrices = DType::F32);

}  // namespace fsvd
