#include "compress/gram_store.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace fsvd {
namespace {

constexpr char kMagic[8] = {'F', 'S', 'V', 'D', 'G', 'R', 'M', '1'};
constexpr int32_t kMaxInputs = 16;  // a sanity bound while parsing

uint64_t fnv1a(uint64_t h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int64_t triangle(int64_t dim) { return dim * (dim + 1) / 2; }

template <typename T>
void put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T take(std::ifstream& in, const std::string& path) {
  T value{};
  in.read(reinterpret_cast<char*>(&value), sizeof(T));
  check(in.good(), path, "calibration statistics file is truncated");
  return value;
}

std::string describe(const GramStoreKey& k) {
  std::string dims;
  for (int64_t d : k.dims) dims += (dims.empty() ? "" : "/") + std::to_string(d);
  return std::to_string(k.layers) + " layers of widths " + dims + ", " + std::to_string(k.tokens) +
         " tokens in windows of " + std::to_string(k.window) + ", fingerprint " + std::to_string(k.fingerprint);
}

}  // namespace

GramStoreKey gram_store_key(const Model& dense, std::span<const int32_t> tokens, int window) {
  GramStoreKey key;
  key.layers = dense.config.n_layers;
  for (int i = 0; i < 4; ++i) key.dims.push_back(linear_input_dim(dense.config, LinearInput(i)));  // by LinearInput
  key.tokens = static_cast<int64_t>(tokens.size());
  key.window = window;
  uint64_t h = 1469598103934665603ull;
  h = fnv1a(h, tokens.data(), tokens.size_bytes());
  const Tensor& q = dense.layers.at(0).q.first;
  h = fnv1a(h, q.data(), static_cast<size_t>(q.numel()) * sizeof(float));
  h = fnv1a(h, dense.final_norm.data(), static_cast<size_t>(dense.final_norm.numel()) * sizeof(float));
  key.fingerprint = h;
  return key;
}

GramStoreWriter::GramStoreWriter(std::string path, GramStoreKey key)
    : path_(std::move(path)), key_(std::move(key)), out_(path_ + ".tmp", std::ios::binary | std::ios::trunc) {
  check(out_.good(), path_ + ".tmp", "cannot create the calibration statistics file");
  out_.write(kMagic, sizeof kMagic);
  put<int32_t>(out_, key_.layers);
  put<int32_t>(out_, static_cast<int32_t>(key_.dims.size()));
  for (int64_t d : key_.dims) put<int64_t>(out_, d);
  put<int64_t>(out_, key_.tokens);
  put<int32_t>(out_, key_.window);
  put<uint64_t>(out_, key_.fingerprint);
}

void GramStoreWriter::add(const LayerGrams& layer) {
  check(written_ < key_.layers && layer.size() == key_.dims.size(), path_, "statistics of layer ", written_,
        " do not fit the file's ", describe(key_));
  for (size_t i = 0; i < layer.size(); ++i) {
    const Gram& g = layer[i];
    check(g.dim() == key_.dims[i], path_, "input ", i, " has width ", g.dim(), ", expected ", key_.dims[i]);
    put<int64_t>(out_, g.rows());
    for (int64_t r = 0; r < g.dim(); ++r)
      out_.write(reinterpret_cast<const char*>(g.lower().data() + r * g.dim()), (r + 1) * sizeof(double));
  }
  check(out_.good(), path_ + ".tmp", "write failed (disk full?)");
  ++written_;
}

void GramStoreWriter::commit() {
  check(written_ == key_.layers, path_, "only ", written_, " of ", key_.layers, " layers written");
  out_.close();
  check(!out_.fail(), path_ + ".tmp", "write failed (disk full?)");
  std::filesystem::rename(path_ + ".tmp", path_);
}

GramStoreReader::GramStoreReader(std::string path, const GramStoreKey& expected)
    : path_(std::move(path)), in_(path_, std::ios::binary) {
  check(in_.good(), path_, "cannot open the calibration statistics file");
  char magic[sizeof kMagic];
  in_.read(magic, sizeof magic);
  check(in_.good() && std::memcmp(magic, kMagic, sizeof kMagic) == 0, path_,
        "not a flashsvd calibration statistics file");
  key_.layers = take<int32_t>(in_, path_);
  const int32_t inputs = take<int32_t>(in_, path_);
  check(key_.layers > 0 && inputs > 0 && inputs <= kMaxInputs, path_, "corrupt header (", key_.layers, " layers, ",
        inputs, " inputs)");
  for (int32_t i = 0; i < inputs; ++i) {
    key_.dims.push_back(take<int64_t>(in_, path_));
    check(key_.dims.back() > 0 && key_.dims.back() <= (int64_t{1} << 20), path_, "corrupt header (width ",
          key_.dims.back(), ")");
  }
  key_.tokens = take<int64_t>(in_, path_);
  key_.window = take<int32_t>(in_, path_);
  key_.fingerprint = take<uint64_t>(in_, path_);
  check(key_ == expected, path_, "these statistics (", describe(key_), ") are not those of this model and calibration (",
        describe(expected), "); pass another --stats path or delete the file");
  data_start_ = static_cast<int64_t>(in_.tellg());
  for (int64_t d : key_.dims) layer_bytes_ += static_cast<int64_t>(sizeof(int64_t)) + triangle(d) * 8;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path_));
  check(size == data_start_ + key_.layers * layer_bytes_, path_, "calibration statistics file has ", size,
        " bytes, expected ", data_start_ + key_.layers * layer_bytes_);
}

LayerGrams GramStoreReader::layer(int32_t index) {
  check(index >= 0 && index < key_.layers, path_, "layer ", index, " outside the file's ", key_.layers);
  in_.clear();
  in_.seekg(data_start_ + index * layer_bytes_);
  LayerGrams grams;
  for (int64_t dim : key_.dims) {
    const int64_t rows = take<int64_t>(in_, path_);
    std::vector<double> lower(dim * dim, 0.0);
    for (int64_t r = 0; r < dim; ++r) in_.read(reinterpret_cast<char*>(lower.data() + r * dim), (r + 1) * sizeof(double));
    check(in_.good(), path_, "calibration statistics file is truncated");
    grams.emplace_back(dim, rows, std::move(lower));
  }
  return grams;
}

}  // namespace fsvd
