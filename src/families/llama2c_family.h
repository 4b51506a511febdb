#pragma once
// llama2.c .bin checkpoints (fp32, v0 legacy or v1): dense LLaMA with
// interleaved RoPE, so q and k rows are reordered at load.
#include <string>

#include "formats/llama2c.h"
#include "model/model.h"

namespace fsvd {

std::string llama2c_mismatch(const std::string& path);
Model load_llama2c(const std::string& path);
// The validated, packed model of an already parsed file (used by tests and fuzzers on memory buffers).
Model llama2c_to_model(const Llama2cFile& file);

}  // namespace fsvd
