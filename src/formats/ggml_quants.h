#pragma once
// ggml tensor types: block geometry for every type id GGUF files use, and
// which of them this reader can dequantize. ggml_dequantize / ggml_nbytes
// (declared in formats/gguf.h) are implemented next to this table.
#include <cstddef>
#include <cstdint>
#include <string>

namespace fsvd {

struct GgmlTypeInfo {
  const char* name;
  int64_t block_elems;  // elements per block (1 for plain float types)
  size_t block_bytes;   // bytes per block
  bool dequantizable;   // ggml_dequantize supports it
};

// nullptr for ids ggml does not define.
const GgmlTypeInfo* ggml_type_info(uint32_t type);

// "Q4_K (type 12)" or "unknown type 99": for error messages.
std::string ggml_type_label(uint32_t type);

}  // namespace fsvd
