#pragma once
// The unified model applies RoPE Hugging Face's way ("rotate_half": dimension
// pairs (i, i + head_dim/2)). Meta's original code, llama2.c and llama.cpp's
// "llama" GGUF files pair (2i, 2i+1) instead. Reordering each head's q and k
// rows converts one into the other exactly: attention scores are unchanged.
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace fsvd {

// Rows of a q or k projection (weight [n_heads * head_dim, in] or bias
// [n_heads * head_dim]) from the interleaved order to rotate_half order: per
// head, new row j <- old row 2j and new row head_dim/2 + j <- old row 2j + 1.
// Returns a new tensor; throws naming `where` if the rows do not split into
// heads of even size.
Tensor interleaved_to_half_rope_rows(const Tensor& w, int64_t n_heads, const std::string& where);

}  // namespace fsvd
