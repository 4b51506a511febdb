#pragma once
// GGUF writer for metadata-only files (no tensors), e.g. a model's tokenizer
// kept beside a converted model. Values are written in the widened types the
// reader returns them in (int64, float64, bool, string, arrays of one kind).
#include <map>
#include <string>

#include "formats/gguf.h"

namespace fsvd {

// Writes a GGUF v3 file with these pairs and no tensors. Throws Error naming
// `path` for arrays mixing element kinds and for I/O failures.
void write_gguf_metadata(const std::string& path, const std::map<std::string, GgufValue>& metadata);

}  // namespace fsvd
