#pragma once
// Storage dtypes found in checkpoint files and their conversion to fp32.
#include <cstddef>
#include <cstdint>
#include <string>

namespace fsvd {

enum class DType { F32, F16, BF16, F64, I8, U8, I16, I32, I64, Bool };

size_t dtype_size(DType t);
std::string dtype_name(DType t);

float f16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);  // round to nearest even; NaN stays NaN
uint16_t f32_to_f16(float f);   // round to nearest even
// fp8 e4m3 (OCP FP8 E4M3FN: bias 7, no infinities, 0x7f / 0xff NaN, largest
// 448), the fp8 KV cache's element. Round to nearest even, saturating to
// ±448 as CUDA's __NV_SATFINITE conversion does (infinities too); NaN -> 0x7f.
uint8_t f32_to_e4m3(float f);
float e4m3_to_f32(uint8_t b);

// Converts n little-endian values of a floating dtype to fp32; throws for others.
void to_f32(DType t, const void* src, size_t n, float* dst, const std::string& where);

}  // namespace fsvd
