#pragma once
// GGUF files of llama.cpp's "llama" (LLaMA, Mistral, SmolLM, ...) and "qwen2"
// architectures. llama.cpp's converter reorders the q/k rows of "llama" models
// to interleaved RoPE; they are reordered back at load. "qwen2" is stored in
// Hugging Face's order.
#include <string>

#include "formats/gguf.h"
#include "model/model.h"

namespace fsvd {

std::string gguf_mismatch(const std::string& path);
Model load_gguf(const std::string& path);
// The validated, packed model of an already parsed file (tests build files in memory).
Model gguf_to_model(const GgufFile& file);

}  // namespace fsvd
