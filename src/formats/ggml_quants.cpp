// Dequantization of ggml block formats. Layouts follow ggml's block structs
// (ggml-common.h) byte for byte; the K-quant scale packing is described at
// unpack_scale_min. Values are computed in the same operation order as ggml's
// reference dequantizers so results match them exactly.
#include "formats/ggml_quants.h"

#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"
#include "formats/gguf.h"

namespace fsvd {
namespace {

enum : uint32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30 };

struct TypeEntry {
  uint32_t id;
  GgmlTypeInfo info;
};

// Every type id ggml defines, so unsupported ones are reported by name.
constexpr TypeEntry kTypes[] = {
    {0, {"F32", 1, 4, true}},          {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", 32, 18, true}},       {3, {"Q4_1", 32, 20, true}},
    {6, {"Q5_0", 32, 22, false}},      {7, {"Q5_1", 32, 24, false}},
    {8, {"Q8_0", 32, 34, true}},       {9, {"Q8_1", 32, 40, false}},
    {10, {"Q2_K", 256, 84, false}},    {11, {"Q3_K", 256, 110, false}},
    {12, {"Q4_K", 256, 144, true}},    {13, {"Q5_K", 256, 176, true}},
    {14, {"Q6_K", 256, 210, true}},    {15, {"Q8_K", 256, 292, false}},
    {16, {"IQ2_XXS", 256, 66, false}}, {17, {"IQ2_XS", 256, 74, false}},
    {18, {"IQ3_XXS", 256, 98, false}}, {19, {"IQ1_S", 256, 50, false}},
    {20, {"IQ4_NL", 32, 18, false}},   {21, {"IQ3_S", 256, 110, false}},
    {22, {"IQ2_S", 256, 82, false}},   {23, {"IQ4_XS", 256, 136, false}},
    {24, {"I8", 1, 1, false}},         {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},        {27, {"I64", 1, 8, false}},
    {28, {"F64", 1, 8, false}},        {29, {"IQ1_M", 256, 56, false}},
    {30, {"BF16", 1, 2, true}},        {34, {"TQ1_0", 256, 54, false}},
    {35, {"TQ2_0", 256, 66, false}},   {39, {"MXFP4", 32, 17, false}},
};

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// Q8_0 (34 bytes): fp16 d, 32 int8 q; x = q * d.
void block_q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int i = 0; i < 32; ++i) y[i] = static_cast<float>(static_cast<int8_t>(b[2 + i])) * d;
}

// Q4_0 (18 bytes): fp16 d, 16 bytes whose low nibbles are elements 0..15 and
// high nibbles 16..31; x = (q - 8) * d.
void block_q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int i = 0; i < 16; ++i) {
    y[i] = static_cast<float>((qs[i] & 0x0F) - 8) * d;
    y[i + 16] = static_cast<float>((qs[i] >> 4) - 8) * d;
  }
}

// Q4_1 (20 bytes): fp16 d, fp16 m, nibbles as Q4_0; x = q * d + m.
void block_q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float m = half_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int i = 0; i < 16; ++i) {
    y[i] = static_cast<float>(qs[i] & 0x0F) * d + m;
    y[i + 16] = static_cast<float>(qs[i] >> 4) * d + m;
  }
}

// Q4_K and Q5_K give each of their 8 sub-blocks (32 elements) a 6-bit scale
// and a 6-bit min, packed into 12 bytes: bytes 0..3 / 4..7 hold scales / mins
// of sub-blocks 0..3 in their low 6 bits; sub-blocks 4..7 take their low 4
// bits from bytes 8..11 (scale: low nibble, min: high nibble) and their top 2
// bits from the spare top bits of bytes 0..3 (scale) and 4..7 (min).
void unpack_scale_min(const uint8_t* s, int j, int& scale, int& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K (144 bytes): fp16 d, fp16 dmin, 12 scale bytes, 128 bytes of nibbles.
// Sub-blocks 2p and 2p+1 are the low and high nibbles of bytes 32p..32p+31;
// Q5_K (176 bytes) adds 32 bytes qh before the nibbles: bit j of qh[l] is the
// fifth bit of element l of sub-block j. x = d*scale*q - dmin*min.
void block_q45_k(const uint8_t* b, float* y, bool fifth_bit) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = fifth_bit ? b + 48 : b + 16;
  for (int j = 0; j < 8; ++j) {
    int scale, min;
    unpack_scale_min(scales, j, scale, min);
    const float dj = d * static_cast<float>(scale);
    const float mj = dmin * static_cast<float>(min);
    const uint8_t* q = qs + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] >> shift) & 0x0F;
      if (fifth_bit) v |= ((qh[l] >> j) & 1) << 4;
      y[32 * j + l] = dj * static_cast<float>(v) - mj;
    }
  }
}

void block_q4_k(const uint8_t* b, float* y) { block_q45_k(b, y, false); }
void block_q5_k(const uint8_t* b, float* y) { block_q45_k(b, y, true); }

// Q6_K (210 bytes): ql[128] low 4 bits, qh[64] high 2 bits, int8 scales[16]
// (one per 16 elements), fp16 d last. Each half of 128 elements uses 64 ql
// bytes and 32 qh bytes; its group k (0..3) of 32 takes the low (k < 2) or
// high nibble of ql[32*(k%2) + l] and bits 2k..2k+1 of qh[l]. x = d*scale*(q - 32).
void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int g = 0; g < 8; ++g) {
    const int half = g / 4, k = g % 4;
    const uint8_t* lo = ql + 64 * half + 32 * (k % 2);
    const uint8_t* hi = qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      const int q = (((lo[l] >> (4 * (k / 2))) & 0x0F) | (((hi[l] >> (2 * k)) & 3) << 4)) - 32;
      const float ds = d * static_cast<float>(scales[(32 * g + l) / 16]);
      y[32 * g + l] = ds * static_cast<float>(q);
    }
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(uint32_t type) {
  switch (type) {
    case kQ4_0: return block_q4_0;
    case kQ4_1: return block_q4_1;
    case kQ8_0: return block_q8_0;
    case kQ4_K: return block_q4_k;
    case kQ5_K: return block_q5_k;
    case kQ6_K: return block_q6_k;
    default: return nullptr;
  }
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
  for (const TypeEntry& e : kTypes) {
    if (e.id == type) return &e.info;
  }
  return nullptr;
}

std::string ggml_type_label(uint32_t type) {
  const GgmlTypeInfo* info = ggml_type_info(type);
  return info ? std::string(info->name) + " (type " + std::to_string(type) + ")"
              : "unknown type " + std::to_string(type);
}

size_t ggml_nbytes(uint32_t type, int64_t n, const std::string& where) {
  const GgmlTypeInfo* info = ggml_type_info(type);
  check(info && info->dequantizable, where, "unsupported ggml tensor type ", ggml_type_label(type));
  check(n >= 0 && n % info->block_elems == 0, where, n, " elements is not a whole number of ", info->name,
        " blocks of ", info->block_elems);
  const auto blocks = static_cast<uint64_t>(n / info->block_elems);
  check(blocks <= std::numeric_limits<size_t>::max() / info->block_bytes, where, n, " elements of ",
        info->name, " overflow the byte count");
  return blocks * info->block_bytes;
}

void ggml_dequantize(uint32_t type, const uint8_t* src, int64_t n, float* dst, const std::string& where) {
  ggml_nbytes(type, n, where);  // validates type and block multiple
  if (n == 0) return;
  switch (type) {
    case kF32: return to_f32(DType::F32, src, n, dst, where);
    case kF16: return to_f32(DType::F16, src, n, dst, where);
    case kBF16: return to_f32(DType::BF16, src, n, dst, where);
    default: break;
  }
  const GgmlTypeInfo& info = *ggml_type_info(type);
  const BlockFn fn = block_fn(type);
  const int64_t blocks = n / info.block_elems;
#pragma omp parallel for schedule(static) if (blocks >= 4096)
  for (int64_t i = 0; i < blocks; ++i) fn(src + i * info.block_bytes, dst + i * info.block_elems);
}

}  // namespace fsvd
