#pragma once
// Assembles GGUF and safetensors files in memory, valid or deliberately
// broken, so reader tests can say exactly which byte is wrong.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsvd::test {

using ByteVec = std::vector<uint8_t>;

// Little-endian appender.
class Bytes {
 public:
  template <typename T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& raw(const ByteVec& bytes);
  Bytes& str(const std::string& s);  // GGUF string: u64 length, then the bytes
  Bytes& pad_to(uint64_t alignment);
  ByteVec out;
};

// GGUF metadata value types.
enum GgufType : uint32_t {
  kGgufU8, kGgufI8, kGgufU16, kGgufI16, kGgufU32, kGgufI32, kGgufF32, kGgufBool,
  kGgufString, kGgufArray, kGgufU64, kGgufI64, kGgufF64,
};

// One encoded metadata pair: key, value type, then `value` as T.
template <typename T>
ByteVec gguf_kv(const std::string& key, uint32_t type, T value) {
  return Bytes().str(key).put<uint32_t>(type).put(value).out;
}
ByteVec gguf_kv_string(const std::string& key, const std::string& value);
// Array pair whose elements are given already encoded, so the count may lie.
ByteVec gguf_kv_array(const std::string& key, uint32_t elem_type, uint64_t count, const ByteVec& elems);

struct GgufTensorSpec {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF order: fastest-varying first
  uint32_t type = 0;           // ggml type id
  ByteVec data;
  std::optional<uint64_t> offset = std::nullopt;  // default: after the previous tensor, aligned
};

struct GgufSpec {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::vector<ByteVec> kvs;
  std::vector<GgufTensorSpec> tensors;
  uint64_t alignment = 32;  // layout only; declare it with a general.alignment pair
  std::optional<uint64_t> tensor_count;  // override the true counts
  std::optional<uint64_t> kv_count;
};

ByteVec build_gguf(const GgufSpec& spec);

struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  ByteVec data;
};

// Tensors laid out back to back in the given order; metadata as __metadata__ when non-empty.
ByteVec build_safetensors(const std::vector<StTensor>& tensors, const nlohmann::json& metadata = {});
// A file from a literal header text and data buffer.
ByteVec build_safetensors_raw(const std::string& header, const ByteVec& data = {});

// The bytes of a vector of trivially copyable values.
template <typename T>
ByteVec as_bytes(const std::vector<T>& values) {
  ByteVec out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// Writes bytes to a fresh file under the test temp dir and returns its path.
std::string write_temp_file(const std::string& stem, const ByteVec& bytes);

}  // namespace fsvd::test
