#pragma once
// safetensors reader: 8-byte LE header length, JSON header, data buffer.
// Validates everything before exposing a byte: header size (<= 100 MB),
// JSON shape, dtype names, offsets in range, non-overlapping, size = shape x dtype.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/tensor.h"

namespace fsvd {

struct RawTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // points into the mapped file
  size_t nbytes = 0;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // maps and validates; throws Error(path, ...)
  // Parses from memory (no file); `name` is used in errors. The bytes must outlive the object.
  SafetensorsFile(const uint8_t* bytes, size_t size, std::string name);

  const std::string& path() const { return path_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const RawTensor& raw(const std::string& name) const;  // throws naming file and tensor
  std::vector<std::string> names() const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The tensor converted to fp32 (F32/F16/BF16/F64 sources).
  Tensor load_f32(const std::string& name) const;

 private:
  void parse(const uint8_t* bytes, size_t size);
  std::string path_;
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, RawTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace fsvd
