#include "families/basis_sharing_family.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "families/config_json.h"
#include "families/hf_config.h"
#include "families/loading.h"
#include "formats/torch_archive.h"

namespace fsvd {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kArchitecture = "ShareLlamaForCausalLM";

// The state dict shards: pytorch_model.bin, or those pytorch_model.bin.index.json lists.
class TorchShards {
 public:
  explicit TorchShards(const std::string& dir) {
    const std::string index = (fs::path(dir) / "pytorch_model.bin.index.json").string();
    if (fs::exists(index)) {
      where_ = index;
      read_index(dir);
    } else {
      where_ = (fs::path(dir) / "pytorch_model.bin").string();
      files_.push_back(std::make_unique<TorchArchive>(where_));
    }
    // Tensors a shard holds beyond the map still count, so none is silently dropped.
    for (const auto& file : files_)
      for (const auto& [name, info] : file->named_tensors()) owner_.emplace(name, file.get());
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, archive] : owner_) out.push_back(name);
    return out;
  }
  const TorchArchive& archive(const std::string& name) const {
    const auto it = owner_.find(name);
    check(it != owner_.end(), where_, "tensor ", name, " not found");
    return *it->second;
  }
  Tensor load_f32(const std::string& name) const { return archive(name).load_f32(name); }
  const std::vector<int64_t>& shape(const std::string& name) const { return archive(name).info(name).shape; }
  const std::string& where() const { return where_; }

 private:
  void read_index(const std::string& dir) {
    const json j = read_json_file(where_);
    check(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), where_,
          "has no \"weight_map\" object");
    std::map<std::string, const TorchArchive*> opened;
    for (const auto& [name, file] : j["weight_map"].items()) {
      check(file.is_string(), where_, "weight_map entry '", name, "' is not a file name");
      const std::string shard = file.get<std::string>();
      check(!shard.empty() && shard.find('/') == std::string::npos && shard.find('\\') == std::string::npos &&
                shard != "..",
            where_, "weight_map entry '", name, "' names '", shard, "', not a file in the directory");
      if (!opened.count(shard)) {
        files_.push_back(std::make_unique<TorchArchive>((fs::path(dir) / shard).string()));
        opened[shard] = files_.back().get();
      }
      check(opened[shard]->contains(name), where_, "tensor ", name, " is mapped to ", shard,
            " but that file does not hold it");
      owner_[name] = opened[shard];
    }
  }
  std::string where_;
  std::vector<std::unique_ptr<TorchArchive>> files_;
  std::map<std::string, const TorchArchive*> owner_;
};

struct MatrixType {
  const char* name;  // q, k, ... as in `<name>_groups`, `num_basis_<name>`
  const char* module;
  Linear Layer::*linear;
};
const MatrixType kTypes[] = {
    {"q", "self_attn", &Layer::q},  {"k", "self_attn", &Layer::k},   {"v", "self_attn", &Layer::v},
    {"o", "self_attn", &Layer::o},  {"gate", "mlp", &Layer::gate},   {"up", "mlp", &Layer::up},
    {"down", "mlp", &Layer::down},
};

// `<m>_groups`: every layer in exactly one group. Absent: every layer alone.
std::vector<std::vector<int>> read_groups(const json& config, const std::string& key, int n_layers,
                                          const std::string& where) {
  std::vector<std::vector<int>> groups;
  if (!config.contains(key) || config[key].is_null()) {
    for (int i = 0; i < n_layers; ++i) groups.push_back({i});
    return groups;
  }
  std::vector<int> seen(n_layers, 0);
  const json& g = config[key];
  check(g.is_array(), where, "'", key, "' must be a list of layer-index lists");
  for (const json& group : g) {
    check(group.is_array() && !group.empty(), where, "'", key, "' must hold non-empty lists of layer indices");
    std::vector<int> members;
    for (const json& i : group) {
      check(i.is_number_integer() && i.get<int64_t>() >= 0 && i.get<int64_t>() < n_layers, where, "'", key,
            "' holds ", i.dump(), ", not a layer index below num_hidden_layers ", n_layers);
      const int layer = i.get<int>();
      check(seen[layer]++ == 0, where, "'", key, "' lists layer ", layer, " twice");
      members.push_back(layer);
    }
    groups.push_back(std::move(members));
  }
  for (int i = 0; i < n_layers; ++i) check(seen[i], where, "'", key, "' puts layer ", i, " in no group");
  return groups;
}

}  // namespace

std::string basis_sharing_mismatch(const std::string& path) {
  const auto claims = [](const json& j) {
    const auto arch = j.find("architectures");
    return arch != j.end() && arch->is_array() && std::find(arch->begin(), arch->end(), kArchitecture) != arch->end();
  };
  return config_json_mismatch(path, claims, std::string("config.json does not name ") + kArchitecture);
}

Model load_basis_sharing(const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string config_text = read_file(config_path);  // read once: the group keys and the model shape
  const json config = parse_json(config_text, config_path);
  const HfConfig hf = parse_llama_config(config_text, config_path);
  const TorchShards shards(dir);
  Model m;
  m.family = "basis_sharing";
  m.source = dir;
  m.config = hf.model;
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();
  const std::map<std::string, std::pair<int64_t, int64_t>> dims = {  // out, in
      {"q", {q_out, d}}, {"k", {kv_out, d}}, {"v", {kv_out, d}}, {"o", {d, q_out}},
      {"gate", {f, d}},  {"up", {f, d}},     {"down", {d, f}}};

  TensorTaker t(shards.names(), [&](const std::string& name) { return shards.load_f32(name); }, shards.where());
  take_hf_embeddings_and_norms(m, t, shards.where());
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.skip(p + "self_attn.rotary_emb.inv_freq");
  }
  for (const MatrixType& type : kTypes) {
    const auto [out, in] = dims.at(type.name);
    const std::string key = std::string("num_basis_") + type.name;
    auto prefix = [&](int layer) {
      return "model.layers." + std::to_string(layer) + "." + type.module + "." + type.name;
    };
    for (const std::vector<int>& group : read_groups(config, std::string(type.name) + "_groups", c.n_layers,
                                                     config_path)) {
      const std::string basis_name = prefix(group[0]) + "_basis.weight";
      check(t.contains(basis_name), shards.where(), "tensor ", basis_name, " not found");
      const std::vector<int64_t>& shape = shards.shape(basis_name);
      check(shape.size() == 2 && shape[0] > 0, shards.where(), "tensor ", basis_name, " must be 2-D [num_basis, in]");
      const int64_t rank = shape[0];
      if (config.contains(key)) {
        check(config[key].is_number_integer() && config[key].get<int64_t>() == rank, config_path, "'", key,
              "' = ", config[key].dump(), " disagrees with tensor ", basis_name, " of shape [", shape[0], ", ",
              shape[1], "] in ", shards.archive(basis_name).path());
      }
      // One storage for the whole group; the members' stored copies must be that same basis.
      const Tensor basis = t.take(basis_name, {rank, in});
      for (const int layer : group) {
        const std::string alias = prefix(layer) + "_basis.weight";
        if (alias != basis_name) {
          const Tensor copy = t.take(alias, {rank, in});
          check(std::memcmp(copy.data(), basis.data(), sizeof(float) * basis.numel()) == 0, shards.where(),
                "tensor ", alias, " differs from ", basis_name, " although '", type.name,
                "_groups' puts their layers in one group");
        }
        const std::string model_alias = "model." + std::string(type.name) + "_basis." + std::to_string(layer) + ".weight";
        if (t.contains(model_alias)) t.take(model_alias, {rank, in});  // a stored copy: shape checked, not kept
        Linear& l = m.layers[layer].*type.linear;
        l.first = basis;
        l.second = t.take(prefix(layer) + "_proj.weight", {out, rank});
      }
    }
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
