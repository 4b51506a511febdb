#include "formats/gguf_writer.h"

#include <bit>
#include <fstream>

#include "core/error.h"

namespace fsvd {

static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes a little-endian host");

namespace {

// GGUF value type ids of the kinds GgufValue holds, in its variant's order.
constexpr uint32_t kTypeOfKind[] = {/*int64*/ 11, /*float64*/ 12, /*bool*/ 7, /*string*/ 8, /*array*/ 9};

class Encoder {
 public:
  explicit Encoder(const std::string& where) : where_(where) {}

  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes.append(p, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes += s;
  }
  void put_value(const GgufValue& value, const std::string& key) {
    if (const auto* i = std::get_if<int64_t>(&value.v)) return put(*i);
    if (const auto* d = std::get_if<double>(&value.v)) return put(*d);
    if (const auto* b = std::get_if<bool>(&value.v)) return put<uint8_t>(*b ? 1 : 0);
    if (const auto* s = std::get_if<std::string>(&value.v)) return put_string(*s);
    const GgufArray& items = std::get<GgufArray>(value.v);
    const size_t kind = items.empty() ? 0 : items[0].v.index();
    put(kTypeOfKind[kind]);
    put<uint64_t>(items.size());
    for (const GgufValue& item : items) {
      check(item.v.index() == kind, where_, "key '", key, "': array mixes element kinds");
      put_value(item, key);
    }
  }

  std::string bytes;

 private:
  const std::string& where_;
};

}  // namespace

void write_gguf_metadata(const std::string& path, const std::map<std::string, GgufValue>& metadata) {
  Encoder e(path);
  e.bytes = "GGUF";
  e.put<uint32_t>(3);
  e.put<uint64_t>(0);  // tensors
  e.put<uint64_t>(metadata.size());
  for (const auto& [key, value] : metadata) {
    e.put_string(key);
    e.put(kTypeOfKind[value.v.index()]);
    e.put_value(value, key);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(e.bytes.data(), static_cast<std::streamsize>(e.bytes.size()));
  out.close();
  check(out.good(), path, "cannot write");
}

}  // namespace fsvd
