#pragma once
// GGUF v2/v3 reader: metadata key/values and tensor infos, with every count,
// string length, dimension and offset bounds-checked against the file.
// Tensors are dequantized to fp32 on request (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// and the K-quants Q4_K, Q5_K, Q6_K common in published files).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace fsvd {

struct GgufValue;
using GgufArray = std::vector<GgufValue>;
struct GgufValue {
  // Integers of every width are widened to int64 (uint64 above INT64_MAX is rejected),
  // floats to double.
  std::variant<int64_t, double, bool, std::string, GgufArray> v;

  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_array() const { return std::holds_alternative<GgufArray>(v); }
  // Typed access; throw Error naming `key` when the type is wrong.
  int64_t as_int(const std::string& key) const;
  double as_float(const std::string& key) const;  // accepts ints too
  bool as_bool(const std::string& key) const;
  const std::string& as_string(const std::string& key) const;
  const GgufArray& as_array(const std::string& key) const;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;           // ggml_type id (0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 8 Q8_0, 12 Q4_K, 13 Q5_K, 14 Q6_K, 30 BF16)
  std::vector<int64_t> dims;   // GGUF order: dims[0] is the fastest-varying (columns)
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
};

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);
  GgufFile(const uint8_t* bytes, size_t size, std::string name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  const GgufValue& get(const std::string& key) const;  // throws naming file and key
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find(const std::string& name) const;  // nullptr when absent
  // Dequantized fp32 tensor with shape in row-major order (reversed GGUF dims:
  // a GGUF [in, out] weight becomes [out, in]).
  Tensor load_f32(const std::string& name) const;

 private:
  void parse(const uint8_t* bytes, size_t size);
  std::string path_;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> index_;  // tensor name -> position in tensors_
};

// Dequantizes n elements (a multiple of the type's block size) of ggml type `type`.
void ggml_dequantize(uint32_t type, const uint8_t* src, int64_t n, float* dst, const std::string& where);
// Bytes needed for n elements of `type`; throws for unsupported types or n not a block multiple.
size_t ggml_nbytes(uint32_t type, int64_t n, const std::string& where);

}  // namespace fsvd
