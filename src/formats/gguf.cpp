// GGUF v2/v3 reader. Layout: magic "GGUF", u32 version, u64 tensor count,
// u64 metadata count, metadata pairs (string key, u32 value type, value),
// tensor infos (string name, u32 n_dims, u64 dims, u32 ggml type, u64 offset),
// padding to the alignment, then the tensor data section. Every count is
// bounded by the bytes left before anything is allocated for it.
#include "formats/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string_view>

#include "core/error.h"
#include "formats/ggml_quants.h"

namespace fsvd {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

enum ValueType : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

constexpr uint32_t kMaxDims = 4;              // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 4;           // arrays of arrays are rare; bound the recursion
constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMinPairBytes = 8 + 4 + 1;   // key length, value type, smallest value
constexpr size_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

// Smallest encoding of one value, so an array count can be checked against the bytes left.
size_t min_value_bytes(uint32_t type) {
  switch (type) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: case kString: return 8;
    case kArray: return 4 + 8;
    default: return 0;
  }
}

const char* kind_name(const GgufValue& value) {
  constexpr const char* kNames[] = {"an integer", "a float", "a bool", "a string", "an array"};
  return kNames[value.v.index()];
}

class Cursor {
 public:
  Cursor(const uint8_t* bytes, size_t size, const std::string& where)
      : bytes_(bytes), size_(size), where_(where) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  template <typename T>
  T read(std::string_view what) {
    check(left() >= sizeof(T), where_, "truncated: ", what, " at offset ", pos_, " needs ", sizeof(T),
          " bytes, ", left(), " left");
    T v;
    std::memcpy(&v, bytes_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const uint64_t len = read<uint64_t>(what);
    check(len <= left(), where_, what, ": string length ", len, " at offset ", pos_ - 8,
          " runs past the end of the file (", left(), " bytes left)");
    std::string s(reinterpret_cast<const char*>(bytes_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const uint8_t* bytes_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& where_;
};

GgufValue read_value(Cursor& c, uint32_t type, const std::string& key, const std::string& where, int depth) {
  switch (type) {
    case kU8: return {int64_t{c.read<uint8_t>(key)}};
    case kI8: return {int64_t{c.read<int8_t>(key)}};
    case kU16: return {int64_t{c.read<uint16_t>(key)}};
    case kI16: return {int64_t{c.read<int16_t>(key)}};
    case kU32: return {int64_t{c.read<uint32_t>(key)}};
    case kI32: return {int64_t{c.read<int32_t>(key)}};
    case kI64: return {c.read<int64_t>(key)};
    case kU64: {
      const auto u = c.read<uint64_t>(key);
      check(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), where, "key '", key,
            "': uint64 value ", u, " is beyond the int64 range");
      return {static_cast<int64_t>(u)};
    }
    case kF32: return {double{c.read<float>(key)}};
    case kF64: return {c.read<double>(key)};
    case kBool: {
      const auto b = c.read<uint8_t>(key);
      check(b <= 1, where, "key '", key, "': bool byte is ", int{b}, ", not 0 or 1");
      return {b == 1};
    }
    case kString: return {c.read_string(key)};
    case kArray: {
      check(depth < kMaxArrayNesting, where, "key '", key, "': arrays nested deeper than ",
            kMaxArrayNesting, " levels");
      const auto elem_type = c.read<uint32_t>(key);
      check(min_value_bytes(elem_type) != 0, where, "key '", key, "': unknown array element type ", elem_type);
      const auto count = c.read<uint64_t>(key);
      check(count <= c.left() / min_value_bytes(elem_type), where, "key '", key, "': array count ", count,
            " cannot fit in the ", c.left(), " bytes left");
      GgufArray items;
      items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(c, elem_type, key, where, depth + 1));
      return {std::move(items)};
    }
    default: fail(where, "key '", key, "' has unknown value type ", type);
  }
}

}  // namespace

int64_t GgufValue::as_int(const std::string& key) const {
  check(is_int(), key, "expected an integer, found ", kind_name(*this));
  return std::get<int64_t>(v);
}

double GgufValue::as_float(const std::string& key) const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v));
  check(std::holds_alternative<double>(v), key, "expected a number, found ", kind_name(*this));
  return std::get<double>(v);
}

bool GgufValue::as_bool(const std::string& key) const {
  check(std::holds_alternative<bool>(v), key, "expected a bool, found ", kind_name(*this));
  return std::get<bool>(v);
}

const std::string& GgufValue::as_string(const std::string& key) const {
  check(is_string(), key, "expected a string, found ", kind_name(*this));
  return std::get<std::string>(v);
}

const GgufArray& GgufValue::as_array(const std::string& key) const {
  check(is_array(), key, "expected an array, found ", kind_name(*this));
  return std::get<GgufArray>(v);
}

GgufFile::GgufFile(const std::string& path) : path_(path), file_(std::make_unique<MappedFile>(path)) {
  parse(file_->data(), file_->size());
}

GgufFile::GgufFile(const uint8_t* bytes, size_t size, std::string name) : path_(std::move(name)) {
  parse(bytes, size);
}

const GgufValue& GgufFile::get(const std::string& key) const {
  const auto it = metadata_.find(key);
  check(it != metadata_.end(), path_, "missing metadata key '", key, "'");
  return it->second;
}

const GgufTensorInfo* GgufFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Tensor GgufFile::load_f32(const std::string& name) const {
  const GgufTensorInfo* t = find(name);
  check(t != nullptr, path_, "no tensor named '", name, "'");
  Tensor out(std::vector<int64_t>(t->dims.rbegin(), t->dims.rend()));
  ggml_dequantize(t->type, t->data, out.numel(), out.data(), path_ + ": tensor '" + name + "'");
  return out;
}

void GgufFile::parse(const uint8_t* bytes, size_t size) {
  Cursor c(bytes, size, path_);
  const auto magic = c.read<uint32_t>("magic");
  check(std::memcmp(&magic, "GGUF", 4) == 0, path_, "not a GGUF file (bad magic)");
  version_ = c.read<uint32_t>("version");
  check(version_ == 2 || version_ == 3, path_, "unsupported GGUF version ", version_, " (2 and 3 are read)");
  const auto tensor_count = c.read<uint64_t>("tensor count");
  const auto kv_count = c.read<uint64_t>("metadata count");
  check(kv_count <= c.left() / kMinPairBytes, path_, "metadata count ", kv_count, " cannot fit in the ",
        c.left(), " bytes left");

  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.read_string("key of metadata pair " + std::to_string(i));
    const auto type = c.read<uint32_t>(key);
    GgufValue value = read_value(c, type, key, path_, 0);
    check(metadata_.emplace(key, std::move(value)).second, path_, "duplicate metadata key '", key, "'");
  }

  uint64_t alignment = kDefaultAlignment;
  if (const auto it = metadata_.find("general.alignment"); it != metadata_.end()) {
    check(it->second.is_int(), path_, "general.alignment is ", kind_name(it->second), ", not an integer");
    const int64_t a = it->second.as_int(it->first);
    check(a > 0 && std::has_single_bit(static_cast<uint64_t>(a)), path_, "general.alignment ", a,
          " is not a power of two");
    alignment = static_cast<uint64_t>(a);
  }

  check(tensor_count <= c.left() / kMinTensorInfoBytes, path_, "tensor count ", tensor_count,
        " cannot fit in the ", c.left(), " bytes left");
  tensors_.reserve(tensor_count);
  std::vector<uint64_t> offsets;
  offsets.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    t.name = c.read_string("name of tensor " + std::to_string(i));
    const std::string where = path_ + ": tensor '" + t.name + "'";
    check(index_.emplace(t.name, i).second, path_, "duplicate tensor name '", t.name, "'");
    const auto n_dims = c.read<uint32_t>(t.name);
    check(n_dims >= 1 && n_dims <= kMaxDims, where, n_dims, " dimensions (1 to ", kMaxDims, " allowed)");
    // The product of the non-zero dims must fit, so the element count cannot
    // overflow in whatever order it is multiplied (load_f32 reverses the dims).
    int64_t nonzero_product = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = c.read<uint64_t>(t.name);
      check(dim <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                (dim == 0 || nonzero_product <= std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dim)),
            where, "dimensions overflow the element count at dimension ", d, " (", dim, ")");
      t.dims.push_back(static_cast<int64_t>(dim));
      if (dim != 0) nonzero_product *= static_cast<int64_t>(dim);
    }
    const int64_t numel = std::count(t.dims.begin(), t.dims.end(), 0) ? 0 : nonzero_product;
    t.type = c.read<uint32_t>(t.name);
    offsets.push_back(c.read<uint64_t>(t.name));

    const GgmlTypeInfo* info = ggml_type_info(t.type);
    check(info && info->dequantizable, where, "unsupported ggml tensor type ", ggml_type_label(t.type));
    check(t.dims[0] % info->block_elems == 0, where, "row length ", t.dims[0], " is not a multiple of the ",
          info->name, " block size ", info->block_elems);
    t.nbytes = ggml_nbytes(t.type, numel, where);
    tensors_.push_back(std::move(t));
  }
  if (tensors_.empty()) return;  // a data section is only needed when there is data

  const uint64_t padding = (alignment - c.pos() % alignment) % alignment;
  check(padding <= c.left(), path_, "data section (aligned to ", alignment, ") starts past the end of the file");
  const size_t data_start = c.pos() + padding;
  const size_t data_size = size - data_start;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    GgufTensorInfo& t = tensors_[i];
    const uint64_t offset = offsets[i];
    check(offset % alignment == 0, path_, "tensor '", t.name, "': offset ", offset,
          " is not a multiple of the alignment ", alignment);
    check(offset <= data_size && t.nbytes <= data_size - offset, path_, "tensor '", t.name, "': ", t.nbytes,
          " bytes at offset ", offset, " run past the end of the ", data_size, "-byte data section");
    t.data = bytes + data_start + offset;
  }

  // Empty tensors occupy no bytes and cannot overlap anything.
  std::vector<const GgufTensorInfo*> by_start;
  for (const GgufTensorInfo& t : tensors_) {
    if (t.nbytes > 0) by_start.push_back(&t);
  }
  std::sort(by_start.begin(), by_start.end(), [](auto* a, auto* b) { return a->data < b->data; });
  for (size_t i = 1; i < by_start.size(); ++i) {
    const GgufTensorInfo& prev = *by_start[i - 1];
    check(prev.data + prev.nbytes <= by_start[i]->data, path_, "tensors '", prev.name, "' and '",
          by_start[i]->name, "' overlap");
  }
}

}  // namespace fsvd
