#pragma once
// Dobi-SVD's 8-bit factors: each value is an index into bitsandbytes' signed
// "dynamic" code table (create_dynamic_map(signed=True, max_exponent_bits=7,
// total_bits=8)), scaled by one absmax per singular vector.
#include <array>
#include <cstdint>
#include <span>

#include "core/tensor.h"

namespace fsvd {

// The 256 code values, ascending: for e = 0..6, ±10^(e-6) times the midpoints
// of linspace(0.1, 1, 2^e + 1), plus 0 and 1. Computed in fp32 exactly as
// torch does it, so every entry equals the table bitsandbytes builds.
const std::array<float, 256>& dynamic_code_table();

// [rows, cols] with out[i][j] = code[codes[i * cols + j]] * absmax[i]
// (`codes` holds rows * cols indices, `absmax` rows scales).
Tensor dequantize_rows(std::span<const uint8_t> codes, int64_t rows, int64_t cols, const float* absmax);

}  // namespace fsvd
