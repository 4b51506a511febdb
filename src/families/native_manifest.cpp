#include "families/native_manifest.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>

#include "core/error.h"
#include "families/config_json.h"

namespace fsvd {

const std::array<const char*, 7> kLinearNames = {"q", "k", "v", "o", "gate", "up", "down"};
const std::array<NativePackGroup, 2> kPackGroups = {{{"qkv", {0, 1, 2}}, {"gate_up", {4, 5}}}};

namespace {

using nlohmann::json;

// ---- shared by writing and reading

// Output dimension of each layer linear, in kLinearNames order.
std::array<int64_t, 7> linear_outs(const ModelConfig& c) {
  const int64_t q = c.q_dim(), kv = c.kv_dim();
  return {q, kv, kv, c.hidden, c.intermediate, c.intermediate, c.hidden};
}

// ---- writing

json linear_json(const NativeLinear& l) {
  json j = {{"first", l.first}};
  if (l.has_rows()) j["rows"] = {l.row_begin, l.row_end};
  if (l.rank >= 0) {
    j["second"] = l.second;
    j["rank"] = l.rank;
  }
  if (!l.bias.empty()) j["bias"] = l.bias;
  return j;
}

json config_json(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  return {{"hidden", c.hidden},
          {"intermediate", c.intermediate},
          {"layers", c.n_layers},
          {"heads", c.n_heads},
          {"kv_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"vocab", c.vocab},
          {"max_seq", c.max_seq},
          {"rope_theta", c.rope_theta},
          {"rope_scaling",
           {{"type", s.type},
            {"factor", s.factor},
            {"low_freq_factor", s.low_freq_factor},
            {"high_freq_factor", s.high_freq_factor},
            {"original_max_position", s.original_max_position}}},
          {"rms_eps", c.rms_eps},
          {"tied_embeddings", c.tied_embeddings}};
}

json shared_json(const std::vector<NativeSharedTensor>& shared) {
  json j = json::array();
  for (const NativeSharedTensor& s : shared) j.push_back({{"tensor", s.tensor}, {"users", s.users}});
  return j;
}

// ---- reading: every accessor names the entry (`at`) and the file in its error

class Reader {
 public:
  explicit Reader(const std::string& where) : where_(where) {}

  void object(const json& j, const std::string& at, std::initializer_list<const char*> keys) const {
    check(j.is_object(), where_, at, " is ", j.type_name(), ", not an object");
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      check(known, where_, at, ": unknown key '", key, "'");
    }
  }
  const json& field(const json& obj, const char* key, const std::string& at) const {
    check(obj.contains(key), where_, at, ": missing '", key, "'");
    return obj.at(key);
  }
  std::string text(const json& obj, const char* key, const std::string& at) const {
    const json& v = field(obj, key, at);
    check(v.is_string(), where_, at, ".", key, " is ", v.type_name(), ", not a string");
    return v.get<std::string>();
  }
  std::string name(const json& obj, const char* key, const std::string& at) const {
    std::string s = text(obj, key, at);
    check(!s.empty(), where_, at, ".", key, " is an empty tensor name");
    return s;
  }
  int64_t integer(const json& v, const std::string& at, int64_t lo, int64_t hi) const {
    check(v.is_number_integer(), where_, at, " is ", v.dump(), ", not an integer");
    check(v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                 : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi,
          where_, at, " = ", v.dump(), " is outside [", lo, ", ", hi, "]");
    return v.get<int64_t>();
  }
  int integer(const json& obj, const char* key, const std::string& at) const {
    return static_cast<int>(integer(field(obj, key, at), at + "." + key, 0, INT_MAX));
  }
  float real(const json& obj, const char* key, const std::string& at) const {
    const json& v = field(obj, key, at);
    check(v.is_number() && std::isfinite(v.get<double>()) && std::fabs(v.get<double>()) <= FLT_MAX, where_, at, ".",
          key, " is ", v.dump(), ", not a finite float");
    return static_cast<float>(v.get<double>());
  }
  bool boolean(const json& obj, const char* key, const std::string& at) const {
    const json& v = field(obj, key, at);
    check(v.is_boolean(), where_, at, ".", key, " is ", v.type_name(), ", not a boolean");
    return v.get<bool>();
  }

  ModelConfig config(const json& j) const {
    const std::string at = "config";
    object(j, at, {"hidden", "intermediate", "layers", "heads", "kv_heads", "head_dim", "vocab", "max_seq",
                   "rope_theta", "rope_scaling", "rms_eps", "tied_embeddings"});
    ModelConfig c;
    c.hidden = integer(j, "hidden", at);
    c.intermediate = integer(j, "intermediate", at);
    c.n_layers = integer(j, "layers", at);
    c.n_heads = integer(j, "heads", at);
    c.n_kv_heads = integer(j, "kv_heads", at);
    c.head_dim = integer(j, "head_dim", at);
    c.vocab = integer(j, "vocab", at);
    c.max_seq = integer(j, "max_seq", at);
    c.rope_theta = real(j, "rope_theta", at);
    c.rms_eps = real(j, "rms_eps", at);
    c.tied_embeddings = boolean(j, "tied_embeddings", at);
    const std::string rs = at + ".rope_scaling";
    const json& s = field(j, "rope_scaling", at);
    object(s, rs, {"type", "factor", "low_freq_factor", "high_freq_factor", "original_max_position"});
    c.rope_scaling.type = text(s, "type", rs);
    c.rope_scaling.factor = real(s, "factor", rs);
    c.rope_scaling.low_freq_factor = real(s, "low_freq_factor", rs);
    c.rope_scaling.high_freq_factor = real(s, "high_freq_factor", rs);
    c.rope_scaling.original_max_position = integer(s, "original_max_position", rs);
    c.validate(where_);
    return c;
  }

  // `out`: the linear's output dimension, which a dense first factor's rows must match.
  NativeLinear linear(const json& j, int64_t out, const std::string& at) const {
    object(j, at, {"first", "rows", "second", "rank", "bias"});
    NativeLinear l;
    l.first = name(j, "first", at);
    check(j.contains("second") == j.contains("rank"), where_, at, ": 'second' and 'rank' must come together");
    if (j.contains("second")) {
      l.second = name(j, "second", at);
      l.rank = integer(j.at("rank"), at + ".rank", 1, INT_MAX);
    }
    if (j.contains("bias")) l.bias = name(j, "bias", at);
    if (j.contains("rows")) {
      const json& r = j.at("rows");
      check(r.is_array() && r.size() == 2, where_, at, ".rows is ", r.dump(), ", not a [begin, end] pair");
      l.row_begin = integer(r[0], at + ".rows[0]", 0, INT_MAX);
      l.row_end = integer(r[1], at + ".rows[1]", 0, INT_MAX);
      const int64_t want = l.rank >= 0 ? l.rank : out;
      check(l.row_end - l.row_begin == want, where_, at, ".rows [", l.row_begin, ", ", l.row_end, ") hold ",
            l.row_end - l.row_begin, " rows but ", l.rank >= 0 ? "its rank is " : "its output dimension is ", want);
    }
    return l;
  }

  // The members of a packed group use consecutive rows of one tensor, from row 0.
  void packed(const NativeLayer& layer, const NativePackGroup& group, const std::string& at) const {
    const std::string& tensor = layer.linears[group.members[0]].first;
    int64_t next = 0;
    for (int i : group.members) {
      const NativeLinear& l = layer.linears[i];
      check(l.first == tensor && l.has_rows() && l.row_begin == next, where_, at, ".", kLinearNames[i],
            ": the first factors of a packed group must be consecutive rows of one tensor (expected '", tensor,
            "' from row ", next, ")");
      next = l.row_end;
    }
  }

  NativeLayer layer(const json& j, const ModelConfig& c, const std::string& at) const {
    object(j, at, {"attn_norm", "mlp_norm", "q", "k", "v", "o", "gate", "up", "down"});
    NativeLayer l;
    l.attn_norm = name(j, "attn_norm", at);
    l.mlp_norm = name(j, "mlp_norm", at);
    const auto outs = linear_outs(c);
    for (size_t i = 0; i < kLinearNames.size(); ++i)
      l.linears[i] = linear(field(j, kLinearNames[i], at), outs[i], at + "." + kLinearNames[i]);
    for (const NativePackGroup& g : kPackGroups) packed(l, g, at);
    return l;
  }

 private:
  const std::string& where_;
};

DType matrix_dtype(const std::string& name, const std::string& where) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    if (dtype_name(t) == name) return t;
  fail(where, "dtype '", name, "' is not F32, F16 or BF16");
}

}  // namespace

std::vector<NativeSharedTensor> shared_tensors(const NativeManifest& m) {
  struct Uses {
    NativeSharedTensor shared;
    std::set<std::string> owners;
  };
  std::vector<Uses> all;
  std::map<std::string, size_t> index;
  auto use = [&](const std::string& tensor, const std::string& owner, const std::string& user) {
    if (tensor.empty()) return;
    const auto [it, fresh] = index.emplace(tensor, all.size());
    if (fresh) all.push_back({{tensor, {}}, {}});
    all[it->second].shared.users.push_back(user);
    all[it->second].owners.insert(owner);
  };
  auto use_linear = [&](const NativeLinear& l, const std::string& owner, const std::string& at) {
    use(l.first, owner, at + ".first");
    use(l.second, owner, at + ".second");
    use(l.bias, owner, at + ".bias");
  };
  use(m.embed, "embed", "embed");
  use(m.final_norm, "final_norm", "final_norm");
  use_linear(m.lm_head, "lm_head", "lm_head");
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const std::string owner = "layers." + std::to_string(i);
    use(m.layers[i].attn_norm, owner, owner + ".attn_norm");
    use(m.layers[i].mlp_norm, owner, owner + ".mlp_norm");
    for (size_t k = 0; k < kLinearNames.size(); ++k)
      use_linear(m.layers[i].linears[k], owner, owner + "." + kLinearNames[k]);
  }
  std::vector<NativeSharedTensor> out;
  for (Uses& u : all)
    if (u.owners.size() > 1) out.push_back(std::move(u.shared));
  return out;
}

std::string native_manifest_json(const NativeManifest& m) {
  json layers = json::array();
  for (const NativeLayer& l : m.layers) {
    json j = {{"attn_norm", l.attn_norm}, {"mlp_norm", l.mlp_norm}};
    for (size_t i = 0; i < kLinearNames.size(); ++i) j[kLinearNames[i]] = linear_json(l.linears[i]);
    layers.push_back(std::move(j));
  }
  const json j = {{"format", kNativeFormat},
                  {"version", kNativeVersion},
                  {"source", {{"family", m.source_family}, {"path", m.source_path}}},
                  {"provenance", m.provenance},
                  {"dtype", dtype_name(m.dtype)},
                  {"config", config_json(m.config)},
                  {"embed", m.embed},
                  {"final_norm", m.final_norm},
                  {"lm_head", linear_json(m.lm_head)},
                  {"layers", std::move(layers)},
                  {"shared", shared_json(shared_tensors(m))}};
  return j.dump(1) + "\n";
}

NativeManifest parse_native_manifest(std::string_view text, const std::string& where) {
  const json j = parse_json(text, where);
  const Reader r(where);
  r.object(j, "the file", {"format", "version", "source", "provenance", "dtype", "config", "embed", "final_norm",
                           "lm_head", "layers", "shared"});
  const std::string format = r.text(j, "format", "the file");
  check(format == kNativeFormat, where, "format is '", format, "', not '", kNativeFormat, "'");
  const json& version = r.field(j, "version", "the file");
  check(version == kNativeVersion, where, "unsupported version ", version.dump(), " (this build reads version ",
        kNativeVersion, ")");

  NativeManifest m;
  const json& source = r.field(j, "source", "the file");
  r.object(source, "source", {"family", "path"});
  m.source_family = r.text(source, "family", "source");
  m.source_path = r.text(source, "path", "source");
  if (j.contains("provenance")) m.provenance = j.at("provenance");
  m.dtype = matrix_dtype(r.text(j, "dtype", "the file"), where);
  m.config = r.config(r.field(j, "config", "the file"));
  m.embed = r.name(j, "embed", "the file");
  m.final_norm = r.name(j, "final_norm", "the file");
  m.lm_head = r.linear(r.field(j, "lm_head", "the file"), m.config.vocab, "lm_head");
  check(!m.config.tied_embeddings || (m.lm_head.first == m.embed && m.lm_head.rank < 0 && !m.lm_head.has_rows()),
        where, "config says tied_embeddings but lm_head is not the embedding '", m.embed, "'");

  const json& layers = r.field(j, "layers", "the file");
  check(layers.is_array() && layers.size() == static_cast<size_t>(m.config.n_layers), where, "layers holds ",
        layers.is_array() ? std::to_string(layers.size()) + " entries" : std::string(layers.type_name()),
        " but config.layers is ", m.config.n_layers);
  for (size_t i = 0; i < layers.size(); ++i)
    m.layers.push_back(r.layer(layers[i], m.config, "layers[" + std::to_string(i) + "]"));

  check(r.field(j, "shared", "the file") == shared_json(shared_tensors(m)), where,
        "'shared' does not list the tensors that the references share");
  return m;
}

}  // namespace fsvd
