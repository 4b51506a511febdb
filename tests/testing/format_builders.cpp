#include "testing/format_builders.h"

#include <fstream>

#include "testing/files.h"

namespace fsvd::test {

Bytes& Bytes::raw(const ByteVec& bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
  return *this;
}

Bytes& Bytes::str(const std::string& s) {
  put<uint64_t>(s.size());
  out.insert(out.end(), s.begin(), s.end());
  return *this;
}

Bytes& Bytes::pad_to(uint64_t alignment) {
  while (out.size() % alignment != 0) out.push_back(0);
  return *this;
}

ByteVec gguf_kv_string(const std::string& key, const std::string& value) {
  return Bytes().str(key).put<uint32_t>(kGgufString).str(value).out;
}

ByteVec gguf_kv_array(const std::string& key, uint32_t elem_type, uint64_t count, const ByteVec& elems) {
  return Bytes().str(key).put<uint32_t>(kGgufArray).put(elem_type).put(count).raw(elems).out;
}

ByteVec build_gguf(const GgufSpec& spec) {
  Bytes b;
  b.out.insert(b.out.end(), spec.magic.begin(), spec.magic.end());
  b.put(spec.version);
  b.put<uint64_t>(spec.tensor_count.value_or(spec.tensors.size()));
  b.put<uint64_t>(spec.kv_count.value_or(spec.kvs.size()));
  for (const ByteVec& kv : spec.kvs) b.raw(kv);

  // Default offsets pack the tensors in order, each aligned.
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const GgufTensorSpec& t : spec.tensors) {
    offsets.push_back(t.offset.value_or(next));
    next = (offsets.back() + t.data.size() + spec.alignment - 1) / spec.alignment * spec.alignment;
  }
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const GgufTensorSpec& t = spec.tensors[i];
    b.str(t.name).put<uint32_t>(t.dims.size());
    for (uint64_t d : t.dims) b.put(d);
    b.put(t.type).put(offsets[i]);
  }
  if (spec.tensors.empty()) return b.out;
  b.pad_to(spec.alignment);
  const size_t data_start = b.out.size();
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const ByteVec& data = spec.tensors[i].data;
    if (data.empty()) continue;  // lets a test place a tensor far past the end without writing there
    const size_t at = data_start + offsets[i];
    if (b.out.size() < at + data.size()) b.out.resize(at + data.size());
    std::copy(data.begin(), data.end(), b.out.begin() + at);
  }
  return b.out;  // no trailing padding: the file ends where the last tensor does
}

ByteVec build_safetensors(const std::vector<StTensor>& tensors, const nlohmann::json& metadata) {
  nlohmann::json header = nlohmann::json::object();
  ByteVec data;
  for (const StTensor& t : tensors) {
    const size_t begin = data.size(), end = begin + t.data.size();
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, end}}};
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  return build_safetensors_raw(header.dump(), data);
}

ByteVec build_safetensors_raw(const std::string& header, const ByteVec& data) {
  Bytes b;
  b.put<uint64_t>(header.size());
  b.out.insert(b.out.end(), header.begin(), header.end());
  return b.raw(data).out;
}

std::string write_temp_file(const std::string& stem, const ByteVec& bytes) {
  const std::string path = unique_temp_path(stem);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

}  // namespace fsvd::test
