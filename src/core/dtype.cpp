#include "core/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace fsvd {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: case DType::I16: return 2;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::F64: return "F64";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::I16: return "I16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

static float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp != 0) return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
  // Subnormal: value = mant * 2^-24.
  const float v = std::ldexp(static_cast<float>(mant), -24);
  return sign ? -v : v;
}

float bf16_to_f32(uint16_t b) { return bits_to_f32(static_cast<uint32_t>(b) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;               // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;              // overflow rounds to inf
  if (abs < 0x38800000u) {                                    // subnormal or zero in fp16
    const float a = bits_to_f32(abs);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));  // a / 2^-24
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

uint8_t f32_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::min(std::fabs(f), 448.0f);
  int exp = 0;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  // Three mantissa bits below the leading one; subnormals (a < 2^-6) share 2^-9.
  const int quantum_exp = std::max(exp - 4, -9);
  const int steps = static_cast<int>(std::nearbyint(std::ldexp(a, -quantum_exp)));  // ties to even
  if (steps == 0) return sign;
  // steps * 2^quantum_exp, normalized: steps in [8, 16) for normal values (16 after rounding up
  // moves to the next binade), [1, 8) for subnormals.
  if (quantum_exp == -9 && steps < 8) return sign | static_cast<uint8_t>(steps);
  const int e = steps >= 16 ? quantum_exp + 1 : quantum_exp;
  const int m = steps >= 16 ? steps / 2 : steps;
  return sign | static_cast<uint8_t>(((e + 3 + 7) << 3) | (m - 8));
}

float e4m3_to_f32(uint8_t b) {
  const int exp = (b >> 3) & 0xf, mant = b & 7;
  if (exp == 0xf && mant == 7) return std::nanf("");
  const float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -9) : std::ldexp(static_cast<float>(8 + mant), exp - 10);
  return (b & 0x80) ? -v : v;
}

void to_f32(DType t, const void* src, size_t n, float* dst, const std::string& where) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (t) {
    case DType::F32:
      if (n) std::memcpy(dst, src, n * 4);
      return;
    case DType::F64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, bytes + 8 * i, 8);
        dst[i] = static_cast<float>(d);
      }
      return;
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = t == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    default:
      fail(where, "dtype ", dtype_name(t), " is not a floating-point weight type");
  }
}

}  // namespace fsvd
