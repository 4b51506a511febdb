#pragma once
// How the decode path stores weights and KV caches on the device. bf16 is the
// serving format (decode is memory-bound, so half the bytes is nearly half the
// time); fp32 keeps the host values exactly, for checks against the CPU
// backend. fp8 (e4m3) is a KV cache element only (CudaOptions::kv_fp8).
// C++17 (included by .cu files).
#include <cstdint>

namespace fsvd::cuda {

enum class ElementType : uint8_t { BF16, F32, F8E4M3 };

constexpr int64_t element_bytes(ElementType t) {
  return t == ElementType::F32 ? 4 : t == ElementType::F8E4M3 ? 1 : 2;
}

// Values per 16-byte load, the unit in which the kernels stream rows.
constexpr int64_t values_per_16_bytes(ElementType t) { return 16 / element_bytes(t); }

// A row-major device matrix [rows, cols] of `type` values, row stride ld.
struct DeviceMatrix {
  const void* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;  // ld: row stride in elements
  ElementType type = ElementType::BF16;
};

// DeviceModel's matrices have their rows and row strides rounded up to
// multiples of 8 (16 bytes of bf16), the padding zero, so cuBLAS always gets
// 16-byte-aligned operands.
constexpr int64_t round_up8(int64_t n) { return (n + 7) / 8 * 8; }

// Units of b needed to cover a (a >= 0, b > 0): grid and slice counts.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// w with its inner dimension widened to the row stride: the same product when
// the input's matching padding columns are zero too (every K then a multiple of 8).
inline DeviceMatrix padded_k(DeviceMatrix w) {
  w.cols = w.ld;
  return w;
}

}  // namespace fsvd::cuda
