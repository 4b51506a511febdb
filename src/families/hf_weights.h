#pragma once
// The safetensors weights of a Hugging Face directory: model.safetensors, or
// shards listed by model.safetensors.index.json ("weight_map": tensor -> file).
// Shared by every family stored as a Hugging Face directory.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "formats/safetensors.h"

namespace fsvd {

class HfWeights {
 public:
  // Opens and validates every shard; throws Error naming the directory or file.
  explicit HfWeights(const std::string& dir);

  std::vector<std::string> names() const;
  // fp32 copy of a tensor; throws naming the tensor and the file it should be in.
  Tensor load_f32(const std::string& name) const;
  // A tensor's shape, without reading it; throws like load_f32.
  std::vector<int64_t> shape(const std::string& name) const;
  // Where tensors are looked up, for error messages: "<dir>/model.safetensors" or the index.
  const std::string& where() const { return where_; }

 private:
  std::string where_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> owner_;
};

}  // namespace fsvd
