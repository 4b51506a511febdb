#pragma once
// Read-only memory map of a whole file. Parsers take a byte span from it and
// must bounds-check every offset they read: files may be truncated or hostile.
#include <cstddef>
#include <cstdint>
#include <string>

namespace fsvd {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fsvd
