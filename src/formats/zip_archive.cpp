// Zip reader: minizip walks and checks the central and local headers through
// I/O callbacks over the input bytes; zlib inflates deflated entries.
#include "formats/zip_archive.h"

#include <unzip.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace fsvd {

namespace {

// Deflate cannot expand data by more than about 1032:1, so a larger declared
// size is a lie that would otherwise cost a huge allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The input as a seekable stream for minizip's I/O callbacks.
struct MemoryStream {
  const uint8_t* bytes;
  uint64_t size;
  uint64_t pos = 0;
};

voidpf ZCALLBACK mem_open(voidpf opaque, const void*, int) { return opaque; }

uLong ZCALLBACK mem_read(voidpf, voidpf stream, void* buf, uLong n) {
  auto& s = *static_cast<MemoryStream*>(stream);
  const uint64_t count = std::min<uint64_t>(n, s.size - s.pos);
  if (count > 0) std::memcpy(buf, s.bytes + s.pos, count);
  s.pos += count;
  return static_cast<uLong>(count);
}

uLong ZCALLBACK mem_write(voidpf, voidpf, const void*, uLong) { return 0; }  // read-only

ZPOS64_T ZCALLBACK mem_tell(voidpf, voidpf stream) { return static_cast<MemoryStream*>(stream)->pos; }

long ZCALLBACK mem_seek(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
  auto& s = *static_cast<MemoryStream*>(stream);
  uint64_t base = 0;
  if (origin == ZLIB_FILEFUNC_SEEK_CUR) base = s.pos;
  if (origin == ZLIB_FILEFUNC_SEEK_END) base = s.size;
  if (offset > s.size - base) return -1;  // seeking past the end means a corrupt offset
  s.pos = base + offset;
  return 0;
}

int ZCALLBACK mem_close(voidpf, voidpf) { return 0; }
int ZCALLBACK mem_error(voidpf, voidpf) { return 0; }

// Closes the minizip handle on every path out of the constructor.
struct UnzipHandle {
  unzFile file;
  ~UnzipHandle() {
    if (file) unzClose(file);
  }
};

std::vector<uint8_t> inflate_raw(const uint8_t* src, uint64_t src_size, uint64_t out_size, const std::string& where,
                                 const std::string& name) {
  std::vector<uint8_t> out(out_size);
  z_stream z{};
  check(inflateInit2(&z, -MAX_WBITS) == Z_OK, where, "entry '", name, "': zlib inflateInit failed");
  // zlib counts in uInt; feed and drain in chunks so entries over 4 GB work.
  constexpr uint64_t kChunk = std::numeric_limits<uInt>::max();
  uint64_t in_pos = 0, out_pos = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_in = const_cast<Bytef*>(src + in_pos);
    z.avail_in = static_cast<uInt>(std::min(kChunk, src_size - in_pos));
    z.next_out = out.data() + out_pos;
    z.avail_out = static_cast<uInt>(std::min(kChunk, out_size - out_pos));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    in_pos += in_before - z.avail_in;
    out_pos += out_before - z.avail_out;
    if (rc == Z_OK && in_before == z.avail_in && out_before == z.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&z);
  check(rc == Z_STREAM_END && out_pos == out_size, where, "entry '", name, "': deflate data is corrupt or its size is not the declared ",
        out_size, " bytes");
  return out;
}

// The end of central directory record must be whole and end the file.
// minizip scans back for its signature and reads a cut-off record as zero
// padded, so a file missing its last bytes would otherwise load as if intact.
void check_end_record(const uint8_t* bytes, size_t size, const std::string& where) {
  constexpr size_t kRecord = 22;  // without the trailing comment, of at most 65535 bytes
  const size_t lowest = size > kRecord + 65535 ? size - kRecord - 65535 : 0;
  for (size_t at = size - 4;; --at) {
    if (std::memcmp(bytes + at, "PK\x05\x06", 4) == 0) {
      check(at + kRecord <= size, where, "truncated: the zip end of central directory record is cut off");
      const size_t comment = bytes[at + 20] | size_t{bytes[at + 21]} << 8;
      check(at + kRecord + comment == size, where, "truncated or with trailing bytes: the zip end record at byte ",
            at, " does not end the ", size, "-byte file");
      return;
    }
    if (at == lowest) break;
  }
  fail(where, "not a zip archive (no end of central directory record)");
}

}  // namespace

ZipArchive::ZipArchive(const uint8_t* bytes, size_t size, std::string where)
    : where_(std::move(where)), bytes_(bytes), size_(size) {
  check(size >= 4 && std::memcmp(bytes, "PK", 2) == 0, where_, "not a zip archive (no 'PK' signature)");
  check_end_record(bytes, size, where_);
  MemoryStream stream{bytes, size};
  zlib_filefunc64_def io{mem_open, mem_read, mem_write, mem_tell, mem_seek, mem_close, mem_error, &stream};
  UnzipHandle zip{unzOpen2_64(where_.c_str(), &io)};
  check(zip.file != nullptr, where_, "not a readable zip archive (central directory missing or corrupt)");

  for (int rc = unzGoToFirstFile(zip.file); rc != UNZ_END_OF_LIST_OF_FILE; rc = unzGoToNextFile(zip.file)) {
    check(rc == UNZ_OK, where_, "corrupt central directory record after entry ", entries_.size());
    unz_file_info64 info;
    check(unzGetCurrentFileInfo64(zip.file, &info, nullptr, 0, nullptr, 0, nullptr, 0) == UNZ_OK, where_,
          "corrupt central directory record ", entries_.size());
    std::string name(info.size_filename, '\0');
    check(unzGetCurrentFileInfo64(zip.file, nullptr, name.data(), static_cast<uLong>(name.size() + 1), nullptr, 0,
                                  nullptr, 0) == UNZ_OK,
          where_, "corrupt name in central directory record ", entries_.size());
    check(name.find('\0') == std::string::npos, where_, "entry name with a NUL byte in record ", entries_.size());
    check((info.flag & 1u) == 0, where_, "entry '", name, "' is encrypted");
    Entry e;
    e.order = entries_.size();
    e.compressed_size = info.compressed_size;
    e.size = info.uncompressed_size;
    e.crc = info.crc;
    e.stored = info.compression_method == 0;
    check(e.stored || info.compression_method == Z_DEFLATED, where_, "entry '", name, "' uses compression method ",
          info.compression_method, " (only stored and deflate are supported)");
    if (e.stored) {
      check(e.size == e.compressed_size, where_, "stored entry '", name, "' declares ", e.size,
            " bytes but holds ", e.compressed_size);
    } else {
      check(e.size / kMaxDeflateRatio <= e.compressed_size, where_, "entry '", name, "' claims ", e.size,
            " bytes from ", e.compressed_size, " deflated bytes, beyond deflate's maximum ratio");
    }
    // Raw mode: no inflating, only the local header check and the data position.
    int method = 0, level = 0;
    check(unzOpenCurrentFile2(zip.file, &method, &level, 1) == UNZ_OK, where_, "entry '", name,
          "': local header is missing or disagrees with the central directory");
    e.data_offset = unzGetCurrentFileZStreamPos64(zip.file);
    unzCloseCurrentFile(zip.file);
    check(e.data_offset <= size && e.compressed_size <= size - e.data_offset, where_, "entry '", name, "': data [",
          e.data_offset, ", +", e.compressed_size, ") runs past the end of the ", size, "-byte archive");
    check(entries_.emplace(name, e).second, where_, "duplicate entry '", name, "'");
  }
}

std::vector<std::string> ZipArchive::names() const {
  std::vector<std::string> out(entries_.size());
  for (const auto& [name, e] : entries_) out[e.order] = name;
  return out;
}

const ZipArchive::Entry& ZipArchive::entry(const std::string& name) const {
  const auto it = entries_.find(name);
  check(it != entries_.end(), where_, "no entry named '", name, "'");
  return it->second;
}

uint64_t ZipArchive::size_of(const std::string& name) const { return entry(name).size; }

std::span<const uint8_t> ZipArchive::read(const std::string& name) const {
  const Entry& e = entry(name);
  const uint8_t* data = bytes_ + e.data_offset;
  // Stored entries skip the CRC check: reading gigabytes of weights up front
  // would defeat the mapping; offsets and sizes are already bounds-checked.
  if (e.stored) return {data, static_cast<size_t>(e.size)};
  std::lock_guard<std::mutex> lock(inflate_mutex_);
  auto& slot = inflated_[name];
  if (!slot) {
    auto out = std::make_unique<std::vector<uint8_t>>(inflate_raw(data, e.compressed_size, e.size, where_, name));
    check(crc32_z(0, out->data(), out->size()) == e.crc, where_, "entry '", name, "': CRC-32 mismatch");
    slot = std::move(out);
  }
  return {slot->data(), slot->size()};
}

}  // namespace fsvd
