#include "backends/op_table/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "core/dtype.h"
#include "model/config.h"

namespace fsvd::optable {

std::vector<float> random_values(size_t n, uint64_t seed, float stddev) {
  std::vector<float> v(n);
  const float a = stddev * std::sqrt(3.0f);
  const auto count = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (count >= (1 << 16))
  for (int64_t i = 0; i < count; ++i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v[i] = a * (static_cast<float>(z >> 40) * 0x1p-23f - 1.0f);  // 24 bits: [-1, 1)
  }
  return v;
}

std::vector<float> as_stored(std::vector<float> values, ElementType type) {
  for (float& v : values) v = as_stored(v, type);
  return values;
}

float round_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }
float round_e4m3(float v) { return e4m3_to_f32(f32_to_e4m3(v)); }

float as_stored(float v, ElementType type) {
  switch (type) {
    case ElementType::BF16: return round_bf16(v);
    case ElementType::F8E4M3: return round_e4m3(v);
    case ElementType::F32: break;
  }
  return v;
}

std::vector<float> with_stride(std::span<const float> values, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(rows * ld, std::numeric_limits<float>::quiet_NaN());
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&out[r * ld], &values[r * cols], cols * sizeof(float));
  return out;
}

PagedLayout::PagedLayout(std::span<const int> lens, int block_size, int max_ctx, bool shuffled, int spare)
    : block_size(block_size), max_blocks((max_ctx + block_size - 1) / block_size), num_blocks(spare),
      lens(lens.begin(), lens.end()) {
  std::vector<int> owned;  // blocks of each sequence, in sequence order
  for (int len : lens) {
    owned.push_back((len + block_size - 1) / block_size);
    num_blocks += owned.back();
  }
  std::vector<int32_t> order(num_blocks);  // order[i]: the pool block of the i-th block handed out
  std::iota(order.begin(), order.end(), 0);
  if (shuffled) std::shuffle(order.begin(), order.end(), std::mt19937(num_blocks));
  const int32_t spare_block = order.back();  // handed to no sequence
  tables.assign(lens.size() * max_blocks, spare_block);
  int next = 0;
  for (size_t s = 0; s < lens.size(); ++s)
    for (int i = 0; i < owned[s]; ++i) tables[s * max_blocks + i] = order[next++];
}

std::vector<float> PagedLayout::keep_filled(std::vector<float> values, int64_t cols,
                                            std::span<const int> filled) const {
  std::vector<uint8_t> keep(pool_rows(), 0);
  for (size_t s = 0; s < filled.size(); ++s)
    for (int t = 0; t < filled[s]; ++t) keep[row(static_cast<int>(s), t)] = 1;
  for (int64_t r = 0; r < pool_rows(); ++r)
    if (!keep[r]) std::fill_n(values.begin() + r * cols, cols, std::numeric_limits<float>::quiet_NaN());
  return values;
}

std::vector<float> rope_frequencies(int head_dim, bool llama3) {
  ModelConfig c;
  c.head_dim = head_dim;
  if (llama3) {
    c.rope_theta = 500000.0f;
    c.rope_scaling.type = "llama3";
    c.rope_scaling.factor = 8.0f;
  }
  std::vector<float> f(head_dim / 2);
  rope_inv_freq(c, f.data());
  return f;
}

Tolerance rope_tolerance(ElementType type) {
  if (type == ElementType::F8E4M3)
    return elementwise(kE4m3Step, kE4m3Subnormal, "device sin/cos within 2 ulps of the CPU's, then one fp8 step");
  return type == ElementType::F32 ? elementwise(0x1p-20, 0x1p-19, "device sin/cos within 2 ulps of the CPU's")
                                  : elementwise(kBf16Step, 0x1p-19,
                                                "device sin/cos within 2 ulps of the CPU's, then one bf16 step");
}

Tolerance stored_tolerance(ElementType type, double rel, std::string why) {
  if (type == ElementType::F8E4M3)
    return elementwise(kE4m3Step, kE4m3Subnormal, "both round nearly equal fp32 values to fp8");
  return type == ElementType::F32 ? elementwise(rel, 0, std::move(why))
                                  : elementwise(kBf16Step, 0, "both round nearly equal fp32 values to bf16");
}

std::string type_name(ElementType t) {
  return t == ElementType::F32 ? "f32" : t == ElementType::F8E4M3 ? "f8" : "bf16";
}

std::string describe(const cuda::HeadShape& s) {
  return "heads=" + std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) +
         " hd=" + std::to_string(s.head_dim);
}

double sum_tolerance(int64_t terms) { return 0x1p-22 * std::sqrt(static_cast<double>(terms)) + 0x1p-22; }

double terms_norm(const float* w, int64_t rows, int64_t cols, int64_t ldw, const float* x, int64_t n,
                  int64_t ldx) {
  std::vector<double> column(cols, 0.0);  // sum over i of w[i][j]^2
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) column[j] += double{w[i * ldw + j]} * w[i * ldw + j];
  double sum = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < cols; ++j) sum += double{x[r * ldx + j]} * x[r * ldx + j] * column[j];
  return std::sqrt(sum);
}

DeviceArray::DeviceArray(std::span<const float> values, ElementType type)
    : bytes_(values.size() * element_bytes(type)), type_(type) {
  if (values.empty()) return;
  if (type == ElementType::F32) {
    FSVD_CUDA_CHECK(cudaMemcpy(bytes_.data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
    return;
  }
  if (type == ElementType::F8E4M3) {
    std::vector<uint8_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_e4m3(values[i]);
    FSVD_CUDA_CHECK(cudaMemcpy(bytes_.data(), bits.data(), bits.size(), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
  FSVD_CUDA_CHECK(cudaMemcpy(bytes_.data(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
}

DeviceArray::DeviceArray(size_t n, ElementType type) : bytes_(n * element_bytes(type)), type_(type) {
  poison(bytes_);
}

std::vector<float> DeviceArray::download(size_t first, size_t count) const {
  const size_t size = bytes_.size() / element_bytes(type_);
  count = std::min(count, size - std::min(first, size));
  const auto* p = static_cast<const uint8_t*>(bytes_.data()) + first * element_bytes(type_);
  if (type_ == ElementType::BF16) return download_bf16(p, count);
  if (type_ == ElementType::F8E4M3) {
    std::vector<uint8_t> bits(count);
    if (count > 0) FSVD_CUDA_CHECK(cudaMemcpy(bits.data(), p, count, cudaMemcpyDeviceToHost));
    std::vector<float> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = e4m3_to_f32(bits[i]);
    return out;
  }
  std::vector<float> out(count);
  if (count > 0) FSVD_CUDA_CHECK(cudaMemcpy(out.data(), p, count * 4, cudaMemcpyDeviceToHost));
  return out;
}

std::vector<float> download_bf16(const void* p, size_t n) {
  std::vector<uint16_t> bits(n);
  if (n > 0) FSVD_CUDA_CHECK(cudaMemcpy(bits.data(), p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(bits[i]);
  return out;
}

}  // namespace fsvd::optable
