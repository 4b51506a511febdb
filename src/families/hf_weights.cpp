#include "families/hf_weights.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "families/config_json.h"

namespace fsvd {

namespace fs = std::filesystem;

namespace {

// Shard names must stay inside the directory. Checked on the name, not on the
// resolved path, because the Hugging Face cache links every file to a blob
// outside the snapshot directory.
void check_shard_name(const std::string& shard, const std::string& index) {
  const fs::path p(shard);
  bool escapes = shard.empty() || p.is_absolute() || p.has_root_name() || p.has_root_directory();
  for (const fs::path& part : p) escapes = escapes || part == "..";
  check(!escapes, index, "shard file name '", shard, "' is not a plain name inside the model directory");
}

}  // namespace

HfWeights::HfWeights(const std::string& dir) {
  const fs::path root(dir);
  const fs::path single = root / "model.safetensors", index = root / "model.safetensors.index.json";
  if (fs::exists(index)) {
    where_ = index.string();
    const nlohmann::json j = read_json_file(where_);
    check(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), where_,
          "expected an object with a 'weight_map' object (tensor name -> shard file)");
    std::map<std::string, const SafetensorsFile*> opened;
    for (const auto& [name, shard] : j["weight_map"].items()) {
      check(shard.is_string(), where_, "weight_map entry for tensor ", name, " is not a file name");
      const std::string file = shard.get<std::string>();
      check_shard_name(file, where_);
      const SafetensorsFile*& f = opened[file];
      if (!f) {
        files_.push_back(std::make_unique<SafetensorsFile>((root / file).string()));
        f = files_.back().get();
      }
      check(f->contains(name), where_, "weight_map puts tensor ", name, " in ", f->path(),
            ", which does not contain it");
      owner_[name] = f;
    }
    return;
  }
  if (fs::exists(single)) {
    where_ = single.string();
    files_.push_back(std::make_unique<SafetensorsFile>(where_));
    for (const std::string& name : files_.back()->names()) owner_[name] = files_.back().get();
    return;
  }
  const bool torch =
      fs::exists(root / "pytorch_model.bin") || fs::exists(root / "pytorch_model.bin.index.json");
  fail(dir, "no model.safetensors or model.safetensors.index.json in the directory",
       torch ? " (pytorch_model.bin checkpoints are not supported by this loader)" : "");
}

std::vector<std::string> HfWeights::names() const {
  std::vector<std::string> out;
  for (const auto& entry : owner_) out.push_back(entry.first);
  return out;
}

Tensor HfWeights::load_f32(const std::string& name) const {
  auto it = owner_.find(name);
  check(it != owner_.end(), where_, "tensor ", name, " not found");
  return it->second->load_f32(name);
}

std::vector<int64_t> HfWeights::shape(const std::string& name) const {
  auto it = owner_.find(name);
  check(it != owner_.end(), where_, "tensor ", name, " not found");
  return it->second->raw(name).shape;
}

}  // namespace fsvd
