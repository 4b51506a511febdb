#pragma once
// Zip archive reader (minizip) over bytes already in memory, such as a mapped
// torch.save file. Stored entries are exposed in place, without a copy;
// deflated ones are inflated on first use. Validates the central directory,
// every entry's data range and its declared sizes before exposing a byte.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace fsvd {

class ZipArchive {
 public:
  // `bytes` must outlive the archive; `where` names it in errors. Throws Error.
  ZipArchive(const uint8_t* bytes, size_t size, std::string where);

  const std::string& where() const { return where_; }
  std::vector<std::string> names() const;  // in archive order
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  uint64_t size_of(const std::string& name) const;  // uncompressed bytes
  // The entry's bytes: a view into the input when stored, else inflated and
  // kept until the archive is destroyed. Throws naming the archive and entry.
  std::span<const uint8_t> read(const std::string& name) const;

 private:
  struct Entry {
    size_t order = 0;
    uint64_t data_offset = 0;  // of the (compressed) data in the input
    uint64_t compressed_size = 0;
    uint64_t size = 0;
    uint32_t crc = 0;  // checked after inflating
    bool stored = true;
  };
  const Entry& entry(const std::string& name) const;

  std::string where_;
  const uint8_t* bytes_;
  size_t size_;
  std::map<std::string, Entry> entries_;
  mutable std::mutex inflate_mutex_;
  mutable std::map<std::string, std::unique_ptr<std::vector<uint8_t>>> inflated_;
};

}  // namespace fsvd
