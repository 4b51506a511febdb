#pragma once
// Shared by the family tests: writing a unified model back into each family's
// on-disk layout (done here independently of the loaders, following each
// format's own converter), comparing models, temporary directories.
#include <cstdint>
#include <string>

#include "testing/format_builders.h"
#include "model/model.h"

namespace fsvd::test {

// llama.cpp's convert_hf_to_gguf LlamaModel.permute: Hugging Face q/k rows
// (rotate_half order) to Meta's interleaved order, per head:
// reshape(n_head, 2, head_dim/2, ...).swapaxes(1, 2). Works on weights and biases.
Tensor hf_to_interleaved_rows(const Tensor& w, int64_t n_heads);

// Every tensor of both models equal bit for bit, configs equal.
void expect_same_model(const Model& got, const Model& want);

// The model (Hugging Face layout, no biases) as a llama2.c file of `version` 0 or 1.
ByteVec llama2c_bytes(const Model& m, int version);

// A fresh empty directory under the test temp dir, removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& stem);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  void write(const std::string& name, const std::string& text) const;
  void write(const std::string& name, const ByteVec& bytes) const;

 private:
  std::string path_;
};

// Shared data file path, or "" when it is absent (tests skip then).
std::string shared_data_file(const std::string& relative);

}  // namespace fsvd::test
