#pragma once
// Helpers shared by the tests of the CUDA ops.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/identity_pages.h"
#include "backends/cuda/kv_cache.h"
#include "core/dtype.h"

namespace fsvd::cuda::testutil {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// All-ones bits: NaN as fp32 and as bf16, so any element left unwritten shows.
template <typename T>
void poison(DeviceBuffer<T>& b) {
  FSVD_CUDA_CHECK(cudaMemset(b.data(), 0xff, b.bytes()));
}
constexpr uint16_t kPoisonBf16 = 0xffff;

// Every value written (poison is NaN) and bit for bit `want`: what another
// launch of a deterministic op gave.
inline ::testing::AssertionResult same_written_values(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (!std::isfinite(got[i])) return ::testing::AssertionFailure() << "element " << i << " is " << got[i];
  if (got.size() != want.size() || std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0)
    return ::testing::AssertionFailure() << "other values than the other launch's";
  return ::testing::AssertionSuccess();
}

// ||out - ref|| / ||ref||, infinite when any output is not finite (unwritten).
inline double relative_error(const float* out, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    num += (double{out[i]} - ref[i]) * (double{out[i]} - ref[i]);
    den += double{ref[i]} * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
inline double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
  return out.size() == ref.size() ? relative_error(out.data(), ref.data(), ref.size())
                                  : std::numeric_limits<double>::infinity();
}

// Rounds values to bf16 in place and returns their bits.
inline std::vector<uint16_t> round_to_bf16(std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] = bf16_to_f32(bits[i] = f32_to_bf16(values[i]));
  return bits;
}

// bf16 bits as fp32 values.
inline std::vector<float> to_float(const std::vector<uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = bf16_to_f32(bits[i]);
  return f;
}

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& v) {
  DeviceBuffer<T> d(v.size());
  d.upload(v);
  return d;
}

// A poisoned bf16 KV cache for ctx positions on the device: one sequence
// over blocks in order (the executor's layout), so row t holds position t.
struct DeviceCache {
  IdentityPages pages;
  DeviceBuffer<uint16_t> k, v;
  DeviceCache(const HeadShape& s, int ctx)
      : pages(ctx), k(size_t(pages.num_blocks()) * pages.block_size() * s.n_kv_heads * s.head_dim), v(k.size()) {
    poison(k), poison(v);
  }
  KvCacheLayer layer() const { return pages.pool(k.data(), v.data(), ElementType::BF16); }
};

inline std::string describe(const HeadShape& s, int pos, int n) {
  return "heads " + std::to_string(s.n_heads) + "/" + std::to_string(s.n_kv_heads) + " hd " +
         std::to_string(s.head_dim) + " pos " + std::to_string(pos) + " n " + std::to_string(n);
}

inline const __nv_bfloat16* as_bf16(const DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<const __nv_bfloat16*>(b.data());
}
inline __nv_bfloat16* as_bf16(DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<__nv_bfloat16*>(b.data());
}

}  // namespace fsvd::cuda::testutil
