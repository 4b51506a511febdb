#pragma once
// Seeded inputs, device buffers and bounds the cases share.
#include <cuda_bf16.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/attention.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/device_matrix.h"
#include "backends/cuda/kv_cache.h"
#include "backends/op_table/op_case.h"

namespace fsvd::optable {

using cuda::DeviceBuffer;
using cuda::ElementType;

// n values uniform in [-a, a) with standard deviation `stddev`, hashed from
// (seed, index): fast enough for 7B-shaped matrices, the same everywhere.
std::vector<float> random_values(size_t n, uint64_t seed, float stddev = 1.0f);

// The values a buffer of `type` holds: rounded to bf16 (nearest even), or as they are.
std::vector<float> as_stored(std::vector<float> values, ElementType type);
float round_bf16(float v);
float round_e4m3(float v);
float as_stored(float v, ElementType type);

// [rows, cols] values laid out with row stride ld, the padding NaN (a kernel
// that reads it shows).
std::vector<float> with_stride(std::span<const float> values, int64_t rows, int64_t cols, int64_t ld);

std::string type_name(ElementType t);
// "heads=32/8 hd=128": query and kv heads, head size.
std::string describe(const cuda::HeadShape& s);

// The relative L2 bound for fp32 sums of `terms` products taken in different
// orders on the two sides: each side's rounding error walks like sqrt(terms)
// ulps (2^-24 each); the bound is 4x that. A lost, doubled or misplaced term
// moves the result by ~1/sqrt(terms), far above it.
double sum_tolerance(int64_t terms);

// sqrt(sum over r, i, j of (w[i][j] * x[r][j])^2): the size of a product's
// terms, the denominator for sum_tolerance (a result that cancels to near
// zero is still judged by the terms that made it). w [rows, cols] row stride
// ldw, x [n, cols] row stride ldx.
double terms_norm(const float* w, int64_t rows, int64_t cols, int64_t ldw, const float* x, int64_t n, int64_t ldx);

// RoPE frequencies for head_dim (theta 10000), or Llama 3.1's scaled ones
// (theta 500000, factor 8).
std::vector<float> rope_frequencies(int head_dim, bool llama3);

// How RoPE'd values of `type` may differ from cpu::rope's: device sin and cos
// are within 2 ulps of the library's, which moves a rotated value of inputs
// |x| < 2 by up to ~2^-20 (more than its own ulp where the pair cancels);
// bf16 (fp8) then rounds the two results at most one step apart.
Tolerance rope_tolerance(ElementType type);

// An elementwise result within `rel` of the CPU's in fp32, stored as `type`:
// as bf16 both sides round nearly equal values, at most one step apart.
Tolerance stored_tolerance(ElementType type, double rel, std::string why);

// One bf16 step of the value (2^-7 relative at most): two roundings of fp32
// values a few ulps apart can land one step apart.
constexpr double kBf16Step = 1.0 / 128;
// One fp8 e4m3 step: 2^-3 of the value, 2^-9 among subnormals.
constexpr double kE4m3Step = 1.0 / 8, kE4m3Subnormal = 1.0 / 512;

// Sequences over one pool of KV blocks, as a batching engine lays them out:
// sequence s owns ceil(lens[s] / block_size) blocks for its positions
// [0, lens[s]), taken in order or shuffled from a pool that also holds
// `spare` blocks no sequence owns. A table entry past a sequence's blocks
// names a spare block, so a read past its length (or of a spare row, which
// the cases fill with NaN) shows.
struct PagedLayout {
  PagedLayout(std::span<const int> lens, int block_size, int max_ctx, bool shuffled, int spare = 2);
  int block_size, max_blocks, num_blocks;
  std::vector<int> lens;
  std::vector<int32_t> tables;  // [sequences, max_blocks]
  int64_t pool_rows() const { return int64_t{num_blocks} * block_size; }
  // Pool row of sequence s's position t.
  int64_t row(int s, int t) const { return view(nullptr, nullptr, 0, s).row(t); }
  // Sequence s's keys and values in pools k and v (rows of stride ld), for cpu::attention.
  cpu::KvView view(const float* k, const float* v, int64_t ld, int s) const {
    return {k, v, ld, tables.data() + int64_t{s} * max_blocks, block_size};
  }
  // `values` (pool_rows() rows of `cols`) with NaN in every row other than
  // sequence s's positions [0, filled[s]), for every s.
  std::vector<float> keep_filled(std::vector<float> values, int64_t cols, std::span<const int> filled) const;
};

// Values on the device as fp32 or bf16.
class DeviceArray {
 public:
  DeviceArray(std::span<const float> values, ElementType type);  // bf16: rounded to nearest even
  DeviceArray(size_t n, ElementType type);                        // every element NaN
  void* data() const { return bytes_.data(); }
  __nv_bfloat16* bf16() const { return reinterpret_cast<__nv_bfloat16*>(bytes_.data()); }
  ElementType type() const { return type_; }
  // Elements [first, first + count) as fp32 (all of them by default).
  std::vector<float> download(size_t first = 0, size_t count = SIZE_MAX) const;

 private:
  DeviceBuffer<uint8_t> bytes_;
  ElementType type_;
};

// n bf16 values at device address p, as fp32.
std::vector<float> download_bf16(const void* p, size_t n);

template <typename T>
DeviceBuffer<T> to_device(std::span<const T> values) {
  DeviceBuffer<T> d(values.size());
  d.upload(values);
  return d;
}
template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& values) {
  return to_device(std::span<const T>(values));
}

// Every byte 0xff: NaN as fp32 and as bf16, so an element left unwritten shows.
template <typename T>
void poison(DeviceBuffer<T>& b) {
  FSVD_CUDA_CHECK(cudaMemset(b.data(), 0xff, b.bytes()));
}
template <typename T>
DeviceBuffer<T> poisoned(size_t n) {
  DeviceBuffer<T> b(n);
  poison(b);
  return b;
}

// Integers (ids, positions, flags) as the fp32 values outputs hold.
template <typename T>
std::vector<float> as_floats(const std::vector<T>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace fsvd::optable
