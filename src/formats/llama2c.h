#pragma once
// llama2.c checkpoint reader (karpathy/llama2.c): the legacy "v0" layout
// (7 int32 header; a negative vocab size flags an unshared classifier) and
// the versioned "ak42" v1 layout (256-byte header). Both are fp32. The header
// is validated and the file size must be exactly what it implies, so a file
// that parses is known to hold every tensor in full.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace fsvd {

struct Llama2cHeader {
  int version = 0;  // 0: legacy, 1: "ak42" fp32
  int dim = 0;
  int hidden_dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int vocab_size = 0;  // always positive here
  int seq_len = 0;
  bool shared_classifier = true;

  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return head_size() * n_kv_heads; }
};

class Llama2cFile {
 public:
  explicit Llama2cFile(const std::string& path);  // maps and validates; throws Error(path, ...)
  // Parses from memory; `name` is used in errors. The bytes must outlive the object.
  Llama2cFile(const uint8_t* bytes, size_t size, std::string name);

  const std::string& path() const { return path_; }
  const Llama2cHeader& header() const { return header_; }

  // Tensors under llama2.c's names, per-layer ones stacked over layers:
  // token_embedding [vocab, dim], rms_att [L, dim], wq [L, dim, dim],
  // wk/wv [L, kv_dim, dim], wo [L, dim, dim], rms_ffn [L, dim],
  // w1/w3 [L, hidden, dim], w2 [L, dim, hidden], rms_final [dim],
  // freq_cis_real/freq_cis_imag [seq_len, head_size/2] (v0 only),
  // wcls [vocab, dim] (only when the classifier is not shared).
  bool contains(const std::string& name) const { return sections_.count(name) != 0; }
  std::vector<std::string> names() const;
  std::vector<int64_t> shape(const std::string& name) const;  // throws naming the tensor
  Tensor load_f32(const std::string& name) const;             // throws naming the tensor

 private:
  struct Section {
    std::vector<int64_t> shape;
    size_t offset = 0;  // bytes from the start of the file
  };
  void parse(const uint8_t* bytes, size_t size);
  const Section& section(const std::string& name) const;

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  const uint8_t* bytes_ = nullptr;
  Llama2cHeader header_;
  std::map<std::string, Section> sections_;
};

}  // namespace fsvd
