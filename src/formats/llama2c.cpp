#include "formats/llama2c.h"

#include <bit>
#include <cstring>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace fsvd {

static_assert(std::endian::native == std::endian::little, "llama2.c files are little-endian fp32");

namespace {

constexpr uint32_t kMagic = 0x616b3432;  // "ak42", written as a little-endian uint32
constexpr size_t kLegacyHeaderBytes = 7 * 4;
constexpr size_t kV1HeaderBytes = 256;
constexpr size_t kV1SharedFlagOffset = 4 + 4 + 7 * 4;  // after magic, version, 7 params

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string describe(const Llama2cHeader& h) {
  std::ostringstream os;
  os << "dim " << h.dim << ", hidden_dim " << h.hidden_dim << ", n_layers " << h.n_layers << ", n_heads "
     << h.n_heads << ", n_kv_heads " << h.n_kv_heads << ", vocab_size " << h.vocab_size << ", seq_len "
     << h.seq_len << ", " << (h.shared_classifier ? "shared" : "separate") << " classifier";
  return os.str();
}

// Reads the 7 header params and range-checks each before it is used in any size arithmetic.
Llama2cHeader read_params(const uint8_t* p, int version, const std::string& where) {
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  // Caps keep every tensor size well inside int64 and reject garbage headers early.
  const int64_t caps[7] = {1 << 16, 1 << 20, 1 << 12, 1 << 12, 1 << 12, 1 << 24, 1 << 24};
  int64_t v[7];
  for (int i = 0; i < 7; ++i) v[i] = read_i32(p + 4 * i);
  Llama2cHeader h;
  h.version = version;
  if (version == 0) {
    // The legacy format flags an unshared classifier with a negative vocab size.
    h.shared_classifier = v[5] > 0;
    if (v[5] < 0) v[5] = -v[5];
  }
  for (int i = 0; i < 7; ++i) {
    check(v[i] >= 1 && v[i] <= caps[i], where, "llama2.c header field ", names[i], " is ", v[i],
          ", expected 1..", caps[i]);
  }
  h.dim = static_cast<int>(v[0]);
  h.hidden_dim = static_cast<int>(v[1]);
  h.n_layers = static_cast<int>(v[2]);
  h.n_heads = static_cast<int>(v[3]);
  h.n_kv_heads = static_cast<int>(v[4]);
  h.vocab_size = static_cast<int>(v[5]);
  h.seq_len = static_cast<int>(v[6]);
  check(h.dim % h.n_heads == 0, where, "llama2.c header: dim ", h.dim, " is not a multiple of n_heads ",
        h.n_heads);
  check(h.n_kv_heads <= h.n_heads && h.n_heads % h.n_kv_heads == 0, where, "llama2.c header: n_heads ",
        h.n_heads, " is not a multiple of n_kv_heads ", h.n_kv_heads);
  check(h.head_size() % 2 == 0, where, "llama2.c header: head size ", h.head_size(),
        " (dim / n_heads) must be even for RoPE");
  return h;
}

// Tensors in file order for each version (see llama2.c export.py legacy_export / version1_export).
std::vector<std::pair<std::string, std::vector<int64_t>>> layout(const Llama2cHeader& h) {
  const int64_t L = h.n_layers, d = h.dim, f = h.hidden_dim, kv = h.kv_dim(), V = h.vocab_size;
  const std::pair<std::string, std::vector<int64_t>> emb{"token_embedding", {V, d}},
      rms_att{"rms_att", {L, d}}, wq{"wq", {L, d, d}}, wk{"wk", {L, kv, d}}, wv{"wv", {L, kv, d}},
      wo{"wo", {L, d, d}}, rms_ffn{"rms_ffn", {L, d}}, w1{"w1", {L, f, d}}, w2{"w2", {L, d, f}},
      w3{"w3", {L, f, d}}, rms_final{"rms_final", {d}},
      freq_real{"freq_cis_real", {h.seq_len, h.head_size() / 2}},
      freq_imag{"freq_cis_imag", {h.seq_len, h.head_size() / 2}}, wcls{"wcls", {V, d}};
  std::vector<std::pair<std::string, std::vector<int64_t>>> order;
  if (h.version == 0) {
    order = {emb, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_real, freq_imag};
  } else {
    order = {rms_att, rms_ffn, rms_final, emb, wq, wk, wv, wo, w1, w2, w3};
  }
  if (!h.shared_classifier) order.push_back(wcls);
  return order;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

Llama2cFile::Llama2cFile(const std::string& path) : path_(path), file_(std::make_unique<MappedFile>(path)) {
  parse(file_->data(), file_->size());
}

Llama2cFile::Llama2cFile(const uint8_t* bytes, size_t size, std::string name) : path_(std::move(name)) {
  parse(bytes, size);
}

void Llama2cFile::parse(const uint8_t* bytes, size_t size) {
  bytes_ = bytes;
  check(size >= kLegacyHeaderBytes, path_, "file is ", size,
        " bytes, too small for a llama2.c header (28 bytes)");
  uint32_t magic;
  std::memcpy(&magic, bytes, sizeof magic);
  size_t offset = kLegacyHeaderBytes;
  if (magic == kMagic) {
    check(size >= kV1HeaderBytes, path_, "file is ", size, " bytes, too small for a llama2.c v1 header (",
          kV1HeaderBytes, " bytes)");
    const int32_t version = read_i32(bytes + 4);
    check(version != 2, path_,
          "llama2.c version 2 checkpoints hold int8 (Q8_0) weights, which are not supported; "
          "export with --version 0 or 1 (fp32)");
    check(version == 1, path_, "unknown llama2.c checkpoint version ", version,
          " (supported: legacy v0 and v1 fp32)");
    header_ = read_params(bytes + 8, 1, path_);
    const uint8_t shared = bytes[kV1SharedFlagOffset];
    check(shared <= 1, path_, "llama2.c v1 shared-classifier flag is ", int{shared}, ", expected 0 or 1");
    header_.shared_classifier = shared == 1;
    offset = kV1HeaderBytes;
  } else {
    header_ = read_params(bytes, 0, path_);
  }
  for (auto& [name, shape] : layout(header_)) {
    const size_t nbytes = static_cast<size_t>(numel(shape)) * sizeof(float);
    sections_[name] = {shape, offset};
    offset += nbytes;
  }
  check(offset == size, path_, "llama2.c v", header_.version, " file is ", size, " bytes, but its header (",
        describe(header_), ") implies ", offset, " bytes");
}

std::vector<std::string> Llama2cFile::names() const {
  std::vector<std::string> out;
  for (const auto& entry : sections_) out.push_back(entry.first);
  return out;
}

const Llama2cFile::Section& Llama2cFile::section(const std::string& name) const {
  auto it = sections_.find(name);
  if (it == sections_.end()) {
    fail(path_, "no tensor '", name, "' in this llama2.c v", header_.version, " file",
         name == "wcls" ? " (its classifier is shared with the token embedding)" : "");
  }
  return it->second;
}

std::vector<int64_t> Llama2cFile::shape(const std::string& name) const { return section(name).shape; }

Tensor Llama2cFile::load_f32(const std::string& name) const {
  const Section& s = section(name);
  Tensor t(s.shape);
  std::memcpy(t.data(), bytes_ + s.offset, static_cast<size_t>(t.numel()) * sizeof(float));
  return t;
}

}  // namespace fsvd
