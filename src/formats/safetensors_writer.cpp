#include "formats/safetensors_writer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fsvd {

static_assert(std::endian::native == std::endian::little, "the safetensors writer assumes a little-endian host");

namespace {

constexpr size_t kChunk = 1 << 16;  // values converted per write for 2-byte dtypes

void write_bytes(std::ofstream& out, const void* data, size_t n, const std::string& path) {
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  check(out.good(), path, "write failed (disk full?)");
}

// Streams the values as `dtype`, converting a chunk at a time so no second copy of a large tensor is made.
void write_values(std::ofstream& out, const SafetensorsEntry& e, const std::string& path) {
  const float* src = e.tensor.data();
  const size_t n = static_cast<size_t>(e.tensor.numel());
  if (e.dtype == DType::F32) return write_bytes(out, src, n * sizeof(float), path);
  std::vector<uint16_t> buf(std::min(n, kChunk));
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t count = std::min(kChunk, n - begin);
    for (size_t i = 0; i < count; ++i) {
      const float v = src[begin + i];
      if (e.dtype == DType::BF16) {
        buf[i] = f32_to_bf16(v);
        continue;
      }
      buf[i] = f32_to_f16(v);
      check(!std::isfinite(v) || (buf[i] & 0x7c00u) != 0x7c00u, path, "tensor '", e.name, "' holds ", v,
            ", beyond the F16 range (65504); store it as BF16 or F32");
    }
    write_bytes(out, buf.data(), count * sizeof(uint16_t), path);
  }
}

std::string header_text(const std::vector<SafetensorsEntry>& tensors,
                        const std::map<std::string, std::string>& metadata, const std::string& path) {
  nlohmann::json header = nlohmann::json::object();
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : tensors) {
    check(!e.name.empty() && e.name != "__metadata__", path, "invalid tensor name '", e.name, "'");
    check(names.insert(e.name).second, path, "tensor '", e.name, "' is written twice");
    check(e.dtype == DType::F32 || e.dtype == DType::F16 || e.dtype == DType::BF16, path, "tensor '", e.name,
          "': cannot store as ", dtype_name(e.dtype), " (F32, F16 or BF16 only)");
    check(!e.tensor.empty(), path, "tensor '", e.name, "' has no data");
    const uint64_t end = offset + static_cast<uint64_t>(e.tensor.numel()) * dtype_size(e.dtype);
    header[e.name] = {{"dtype", dtype_name(e.dtype)}, {"shape", e.tensor.shape()}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string header = header_text(tensors, metadata, path);
  const std::string partial = path + ".partial";
  try {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    check(out.good(), partial, "cannot create");
    const uint64_t header_len = header.size();
    write_bytes(out, &header_len, sizeof(header_len), partial);
    write_bytes(out, header.data(), header.size(), partial);
    for (const SafetensorsEntry& e : tensors) write_values(out, e, partial);
    out.close();
    check(out.good(), partial, "write failed on close");
    std::error_code ec;
    std::filesystem::rename(partial, path, ec);
    check(!ec, path, "cannot move the finished file into place: ", ec.message());
  } catch (const Error&) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
}

}  // namespace fsvd
