#include "families/palu_family.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"
#include "families/config_json.h"
#include "families/hf_config.h"
#include "families/hf_weights.h"
#include "families/loading.h"

namespace fsvd {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kModelType = "palullama";

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// head_wise_ranks: module name -> ranks of its head groups.
std::map<std::string, std::vector<int64_t>> read_ranks(const json& config, const std::string& where) {
  std::map<std::string, std::vector<int64_t>> out;
  const auto it = config.find("head_wise_ranks");
  check(it != config.end() && it->is_object(), where, "'head_wise_ranks' must be an object {module: [rank, ...]}");
  for (const auto& [name, ranks] : it->items()) {
    check(ranks.is_array() && !ranks.empty(), where, "'head_wise_ranks' entry '", name, "' is not a list of ranks");
    for (const json& r : ranks) {
      check(r.is_number_integer() && r.get<int64_t>() > 0, where, "'head_wise_ranks' entry '", name, "' holds ",
            r.dump(), ", not a positive rank");
      out[name].push_back(r.get<int64_t>());
    }
  }
  return out;
}

// `name` is either dense (`.weight`) or Palu's grouped factorization. The
// unified Linear has a single second factor, so the per-group U_g become one
// block-diagonal [out, sum r_g] matrix: the same product, at the cost of the
// zero blocks in the (small) k/v second factors.
Linear take_kv(TensorTaker& t, const HfWeights& w, const std::string& name, int64_t out, int64_t in, bool bias,
               const std::map<std::string, std::vector<int64_t>>& listed, const std::string& config_path) {
  const auto entry = listed.find(name);
  if (!t.contains(name + ".VT.weight")) {
    check(entry == listed.end(), config_path, "'head_wise_ranks' lists ", name, " but ", w.where(),
          " holds no ", name, ".VT.weight");
    return Linear{t.take(name + ".weight", {out, in}), Tensor(), bias ? t.take(name + ".bias", {out}) : Tensor()};
  }
  int64_t groups = 0;
  while (t.contains(name + ".U." + std::to_string(groups) + ".weight")) ++groups;
  check(groups > 0, w.where(), "tensor ", name, ".VT.weight has no ", name, ".U.0.weight to go with it");
  check(out % groups == 0, w.where(), name, " has ", groups, " head groups, which do not divide its ", out,
        " outputs");
  const int64_t group_dim = out / groups;
  std::vector<Tensor> us;
  std::vector<int64_t> ranks;
  for (int64_t g = 0; g < groups; ++g) {
    const std::string u = name + ".U." + std::to_string(g) + ".weight";
    us.push_back(w.load_f32(u));
    t.skip(u);
    check(us.back().ndim() == 2 && us.back().dim(0) == group_dim && us.back().dim(1) > 0, w.where(), "tensor ", u,
          " has shape ", us.back().shape_str(), " but ", groups, " groups of ", out, " outputs need [", group_dim,
          ", rank]");
    ranks.push_back(us.back().dim(1));
  }
  check(entry != listed.end(), config_path, "'head_wise_ranks' does not list ", name, " although ", w.where(),
        " stores it factorized with ranks ", list_str(ranks));
  check(entry->second == ranks, config_path, "'head_wise_ranks' lists ", list_str(entry->second), " for ", name,
        " but its tensors in ", w.where(), " have ranks ", list_str(ranks));
  int64_t total = 0;
  for (const int64_t r : ranks) total += r;
  Linear l{t.take(name + ".VT.weight", {total, in}), Tensor({out, total}), Tensor()};
  for (int64_t g = 0, col = 0; g < groups; col += ranks[g], ++g)
    for (int64_t i = 0; i < group_dim; ++i)
      std::copy_n(us[g].data() + i * ranks[g], ranks[g], l.second.data() + (g * group_dim + i) * total + col);
  if (bias) {
    std::vector<Tensor> parts;
    for (int64_t g = 0; g < groups; ++g)
      parts.push_back(t.take(name + ".U." + std::to_string(g) + ".bias", {group_dim}).reshaped({1, group_dim}));
    l.bias = concat_rows(parts).reshaped({out});
  }
  return l;
}

}  // namespace

std::string palu_mismatch(const std::string& path) {
  const auto claims = [](const json& j) { return j.value("model_type", json()) == kModelType; };
  return config_json_mismatch(path, claims, std::string("config.json's model_type is not ") + kModelType);
}

Model load_palu(const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const json config = read_json_file(config_path);
  const HfConfig hf = parse_hf_config(read_file(config_path), config_path);
  check(hf.model_type == kModelType, config_path, "model_type '", hf.model_type, "' is not ", kModelType);
  const auto listed = read_ranks(config, config_path);
  const HfWeights weights(dir);
  Model m;
  m.family = "palu";
  m.source = dir;
  m.config = hf.model;
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();

  TensorTaker t(weights.names(), [&](const std::string& name) { return weights.load_f32(name); }, weights.where());
  take_hf_embeddings_and_norms(m, t, weights.where());
  auto dense = [&](const std::string& prefix, int64_t out, int64_t in, bool bias) {
    return Linear{t.take(prefix + ".weight", {out, in}), Tensor(), bias ? t.take(prefix + ".bias", {out}) : Tensor()};
  };
  size_t factorized = 0;
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = m.layers[i];
    l.q = dense(p + "self_attn.q_proj", q_out, d, hf.attention_bias);
    l.k = take_kv(t, weights, p + "self_attn.k_proj", kv_out, d, hf.attention_bias, listed, config_path);
    l.v = take_kv(t, weights, p + "self_attn.v_proj", kv_out, d, hf.attention_bias, listed, config_path);
    l.o = dense(p + "self_attn.o_proj", d, q_out, hf.attention_bias);
    l.gate = dense(p + "mlp.gate_proj", f, d, hf.mlp_bias);
    l.up = dense(p + "mlp.up_proj", f, d, hf.mlp_bias);
    l.down = dense(p + "mlp.down_proj", d, f, hf.mlp_bias);
    factorized += l.k.low_rank() + l.v.low_rank();
    t.skip(p + "self_attn.rotary_emb.inv_freq");
  }
  // Every listed module was matched above; any other name is one Palu never factorizes.
  if (factorized != listed.size()) {
    for (const auto& [name, ranks] : listed)
      check(name.ends_with("self_attn.k_proj") || name.ends_with("self_attn.v_proj"), config_path,
            "'head_wise_ranks' lists ", name, ": only k_proj and v_proj are factorized by Palu");
    fail(config_path, "'head_wise_ranks' lists modules that are not layers of this model");
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
