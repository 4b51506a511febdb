// safetensors reader: u64 header length N, N bytes of JSON, then the data
// buffer that every tensor's data_offsets index into.
#include "formats/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fsvd {

static_assert(std::endian::native == std::endian::little, "the safetensors reader assumes a little-endian host");

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
// Valid headers nest three levels: {name: {"shape": [dim]}}. Deeper input is
// refused while parsing, before it can cost memory.
constexpr int kMaxJsonDepth = 3;

bool parse_dtype(const std::string& s, DType& out) {
  static const std::pair<const char*, DType> kNames[] = {
      {"F64", DType::F64}, {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16},
      {"I64", DType::I64}, {"I32", DType::I32}, {"I16", DType::I16}, {"I8", DType::I8},
      {"U8", DType::U8},   {"BOOL", DType::Bool},
  };
  for (const auto& [name, dtype] : kNames) {
    if (s == name) {
      out = dtype;
      return true;
    }
  }
  return false;
}

// Parses the header, refusing deep nesting and duplicate keys (which JSON
// parsers would silently resolve to the last one).
json parse_header(const char* begin, const char* end, const std::string& where) {
  std::vector<std::set<std::string>> keys_per_object;
  const json::parser_callback_t guard = [&](int depth, json::parse_event_t event, json& parsed) {
    check(depth <= kMaxJsonDepth, where, "header JSON nests deeper than ", kMaxJsonDepth, " levels");
    if (event == json::parse_event_t::object_start) keys_per_object.emplace_back();
    if (event == json::parse_event_t::object_end) keys_per_object.pop_back();
    if (event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      check(keys_per_object.back().insert(key).second, where, "duplicate key '", key, "' in header JSON");
    }
    return true;
  };
  try {
    return json::parse(begin, end, guard);
  } catch (const json::exception& e) {
    fail(where, "header is not valid JSON: ", e.what());
  }
}

uint64_t as_u64(const json& j, const std::string& where, const std::string& name, const char* field) {
  check(j.is_number_unsigned(), where, "tensor '", name, "': ", field, " must hold non-negative integers, found ",
        j.dump());
  return j.get<uint64_t>();
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path)
    : path_(path), file_(std::make_unique<MappedFile>(path)) {
  parse(file_->data(), file_->size());
}

SafetensorsFile::SafetensorsFile(const uint8_t* bytes, size_t size, std::string name) : path_(std::move(name)) {
  parse(bytes, size);
}

const RawTensor& SafetensorsFile::raw(const std::string& name) const {
  const auto it = tensors_.find(name);
  check(it != tensors_.end(), path_, "no tensor named '", name, "'");
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) out.push_back(name);
  return out;
}

Tensor SafetensorsFile::load_f32(const std::string& name) const {
  const RawTensor& t = raw(name);
  Tensor out(t.shape);
  const auto n = static_cast<size_t>(out.numel());
  if (n > 0) to_f32(t.dtype, t.data, n, out.data(), path_ + ": tensor '" + name + "'");
  return out;
}

void SafetensorsFile::parse(const uint8_t* bytes, size_t size) {
  check(size >= 8, path_, "file is ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_len;
  std::memcpy(&header_len, bytes, 8);
  check(header_len <= kMaxHeaderBytes, path_, "header length ", header_len, " exceeds the 100 MB limit");
  check(header_len <= size - 8, path_, "header length ", header_len, " runs past the end of the file (",
        size, " bytes)");
  const auto* header_begin = reinterpret_cast<const char*>(bytes + 8);
  const json header = parse_header(header_begin, header_begin + header_len, path_);
  check(header.is_object(), path_, "header JSON is ", header.type_name(), ", not an object");

  const uint8_t* data = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      check(entry.is_object(), path_, "__metadata__ is ", entry.type_name(), ", not an object");
      for (const auto& [key, value] : entry.items()) {
        check(value.is_string(), path_, "__metadata__ value of '", key, "' is ", value.type_name(),
              ", not a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    check(entry.is_object(), path_, "tensor '", name, "': entry is ", entry.type_name(), ", not an object");
    const auto dtype_it = entry.find("dtype");
    const auto shape_it = entry.find("shape");
    const auto offsets_it = entry.find("data_offsets");
    check(dtype_it != entry.end() && dtype_it->is_string(), path_, "tensor '", name,
          "': dtype missing or not a string");
    check(shape_it != entry.end() && shape_it->is_array(), path_, "tensor '", name,
          "': shape missing or not an array");
    check(offsets_it != entry.end() && offsets_it->is_array() && offsets_it->size() == 2, path_, "tensor '",
          name, "': data_offsets missing or not a [begin, end] pair");

    RawTensor t;
    const auto& dtype_name = dtype_it->get_ref<const std::string&>();
    check(parse_dtype(dtype_name, t.dtype), path_, "tensor '", name, "': unknown dtype '", dtype_name, "'");

    // The product of the non-zero dims must fit in int64, so the element count
    // cannot overflow in whatever order it is multiplied.
    uint64_t nonzero_product = 1;
    for (const json& dim : *shape_it) {
      const uint64_t d = as_u64(dim, path_, name, "shape");
      check(d <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                (d == 0 || nonzero_product <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d),
            path_, "tensor '", name, "': shape ", shape_it->dump(), " overflows the element count");
      t.shape.push_back(static_cast<int64_t>(d));
      if (d != 0) nonzero_product *= d;
    }
    const uint64_t numel = std::count(t.shape.begin(), t.shape.end(), 0) ? 0 : nonzero_product;
    const uint64_t elem = dtype_size(t.dtype);
    check(numel <= std::numeric_limits<uint64_t>::max() / elem, path_, "tensor '", name, "': shape ",
          shape_it->dump(), " overflows the byte count");

    const uint64_t begin = as_u64((*offsets_it)[0], path_, name, "data_offsets");
    const uint64_t end = as_u64((*offsets_it)[1], path_, name, "data_offsets");
    check(begin <= end && end <= data_size, path_, "tensor '", name, "': data_offsets [", begin, ", ", end,
          ") out of range of the ", data_size, "-byte data buffer");
    check(end - begin == numel * elem, path_, "tensor '", name, "': data_offsets span ", end - begin,
          " bytes but shape ", shape_it->dump(), " of ", dtype_name, " needs ", numel * elem);
    t.data = data + begin;
    t.nbytes = end - begin;
    tensors_.emplace(name, std::move(t));
  }

  // Empty tensors occupy no bytes and cannot overlap anything.
  std::vector<std::pair<const std::string*, const RawTensor*>> by_start;
  for (const auto& [name, t] : tensors_) {
    if (t.nbytes > 0) by_start.emplace_back(&name, &t);
  }
  std::sort(by_start.begin(), by_start.end(),
            [](const auto& a, const auto& b) { return a.second->data < b.second->data; });
  for (size_t i = 1; i < by_start.size(); ++i) {
    const RawTensor& prev = *by_start[i - 1].second;
    check(prev.data + prev.nbytes <= by_start[i].second->data, path_, "tensors '", *by_start[i - 1].first,
          "' and '", *by_start[i].first, "' overlap");
  }
}

}  // namespace fsvd
