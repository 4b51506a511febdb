#pragma once
// torch.save archives (the zip format of torch >= 1.6) read without Python:
// `<archive>/data.pkl` is unpickled by the restricted unpickler and the
// tensors it names are found in a state dict, a nested dict of tensors, a
// pickled nn.Module, or a whole-model dict {'model': module, ...} (SVD-LLM,
// Dobi-SVD). Tensor bytes stay in the mapped file until load_f32.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/tensor.h"
#include "formats/pickle.h"
#include "formats/zip_archive.h"

namespace fsvd {

struct TorchTensorInfo {
  DType dtype = DType::F32;
  std::vector<int64_t> shape, strides;  // strides in elements
  std::string storage_key;              // the entry `<archive>/data/<key>`
  int64_t offset = 0;                   // in elements of dtype, into the storage
  int64_t storage_numel = 0;            // as the pickle declares it (checked against the entry)
};

class TorchArchive {
 public:
  explicit TorchArchive(const std::string& path);  // maps and validates; throws Error(path, ...)
  // Parses from memory; `name` is used in errors. The bytes must outlive the object.
  TorchArchive(const uint8_t* bytes, size_t size, std::string name);

  const std::string& path() const { return path_; }
  // Dotted names (`model.layers.0.mlp.up_u_proj.weight`), every one validated
  // against its storage's size.
  const std::map<std::string, TorchTensorInfo>& named_tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const TorchTensorInfo& info(const std::string& name) const;  // throws naming file and tensor
  // The tensor converted to fp32 (F32/F16/BF16/F64, contiguous strides only).
  Tensor load_f32(const std::string& name) const;
  // The unpickled data.pkl, for callers that need non-tensor fields.
  const pickle::Pickle& pickled() const { return *pickle_; }

 private:
  void parse(const uint8_t* bytes, size_t size);
  std::string path_;
  std::unique_ptr<MappedFile> file_;
  std::unique_ptr<ZipArchive> zip_;
  std::string prefix_;  // "<archive>/"
  std::unique_ptr<pickle::Pickle> pickle_;
  std::map<std::string, TorchTensorInfo> tensors_;
};

}  // namespace fsvd
