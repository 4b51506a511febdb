#include "families/svd_llm_family.h"

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"
#include "core/mapped_file.h"
#include "families/hf_config.h"
#include "families/loading.h"
#include "formats/torch_archive.h"
#include "formats/zip_archive.h"

namespace fsvd {

namespace {

using json = nlohmann::json;
using pickle::Dict;
using pickle::Object;
using pickle::Value;

constexpr std::string_view kSvdModule = "component.svd_llama";

// Plain data (None, numbers, strings, lists and string-keyed dicts of them) as JSON;
// false for anything else or nesting deeper than config.json ever does. One
// failure fails the whole value, so memo aliases cannot make the walk explode.
bool to_json(const Value& v, json& out, int depth) {
  if (depth > 8) return false;
  if (std::holds_alternative<pickle::None>(v)) return true;  // null, which config.json readers treat as absent
  if (const auto* b = std::get_if<bool>(&v)) out = *b;
  else if (const auto* i = std::get_if<int64_t>(&v)) out = *i;
  else if (const auto* d = std::get_if<double>(&v)) out = *d;
  else if (const auto* s = std::get_if<std::string_view>(&v)) out = std::string(*s);
  if (!out.is_null()) return true;
  const std::vector<Value>* seq = nullptr;
  if (const auto* l = std::get_if<pickle::List*>(&v)) seq = &(*l)->items;
  if (const auto* t = std::get_if<pickle::Tuple*>(&v)) seq = &(*t)->items;
  if (seq) {
    out = json::array();
    for (const Value& item : *seq) {
      json j;
      if (!to_json(item, j, depth + 1)) return false;
      out.push_back(std::move(j));
    }
    return true;
  }
  if (const auto* d = std::get_if<Dict*>(&v)) {
    out = json::object();
    for (const auto& [key, item] : (*d)->items) {
      const auto* name = std::get_if<std::string_view>(&key);
      json j;
      if (!name || !to_json(item, j, depth + 1)) return false;
      out[std::string(*name)] = std::move(j);
    }
    return true;
  }
  return false;
}

// The pickled fields of a LlamaConfig as config.json would hold them. Fields
// that are not plain data (a torch dtype, nested config objects) are left
// out, so transformers' defaults apply as for a config.json without them.
json config_json(const Dict& fields) {
  json out = json::object();
  for (const auto& [key, item] : fields.items) {
    const auto* name = std::get_if<std::string_view>(&key);
    json j;
    if (name && to_json(item, j, 0)) out[std::string(*name)] = std::move(j);
  }
  return out;
}

const Dict* object_state(const Value* v) {
  const auto* o = v ? std::get_if<Object*>(v) : nullptr;
  const auto* state = o ? std::get_if<Dict*>(&(*o)->state) : nullptr;
  return state ? *state : nullptr;
}

HfConfig read_config(const TorchArchive& archive) {
  const std::string& path = archive.path();
  const auto* root = std::get_if<Dict*>(&archive.pickled().root());
  const Value* model = root ? (*root)->find(std::string_view("model")) : nullptr;
  const auto* module = model ? std::get_if<Object*>(model) : nullptr;
  check(module, path, "expected a whole-model save {'model': LlamaForCausalLM, ...}, got ",
        pickle::describe(archive.pickled().root()));
  const std::string cls = (*module)->cls ? std::string((*module)->cls->name) : "?";
  check(cls == "LlamaForCausalLM", path, "SVD-LLM model class '", cls,
        "' is not supported (supported: LlamaForCausalLM)");
  const Dict* model_fields = object_state(model);
  const Dict* config = object_state(model_fields ? model_fields->find(std::string_view("config")) : nullptr);
  check(config, path, "the pickled model has no LlamaConfig 'config' with fields");
  json fields = config_json(*config);
  // model_type is a class attribute of LlamaConfig, so it is not pickled.
  if (!fields.contains("model_type")) fields["model_type"] = "llama";
  // Pickled strings need not be UTF-8; replacing bad bytes keeps the text JSON.
  const std::string text = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  const HfConfig hf = parse_hf_config(text, path + " (pickled LlamaConfig)");
  check(hf.model_type == "llama", path, "model_type '", hf.model_type, "' is not supported (supported: llama)");
  return hf;
}

// `prefix` + "_proj" is either dense (`.weight` [out, in]) or split by SVD-LLM
// into `_v_proj` (first, [r, in]) and `_u_proj` (second, [out, r], which also
// carries any bias). The rank comes from the stored shape: module attributes
// and config ranks are not trusted.
Linear take_linear(TensorTaker& t, const TorchArchive& archive, const std::string& prefix, int64_t out,
                   int64_t in) {
  const std::string dense = prefix + "_proj", first = prefix + "_v_proj", second = prefix + "_u_proj";
  if (t.contains(dense + ".weight"))
    return Linear{t.take(dense + ".weight", {out, in}), Tensor(), t.take_optional(dense + ".bias", {out})};
  check(t.contains(first + ".weight") && t.contains(second + ".weight"), archive.path(), "neither ", dense,
        ".weight nor the factor pair ", first, ".weight / ", second, ".weight is present");
  const std::vector<int64_t>& shape = archive.info(first + ".weight").shape;
  check(shape.size() == 2, archive.path(), "tensor ", first, ".weight must be 2-D [rank, in]");
  const int64_t r = shape[0];
  check(r > 0, archive.path(), "tensor ", first, ".weight has rank 0");
  return Linear{t.take(first + ".weight", {r, in}), t.take(second + ".weight", {out, r}),
                t.take_optional(second + ".bias", {out})};
}

}  // namespace

std::string svd_llm_mismatch(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) return "not a regular file";
  try {
    const MappedFile file(path);
    if (file.size() < 4 || std::memcmp(file.data(), "PK\3\4", 4) != 0) return "not a torch.save zip archive";
    const ZipArchive zip(file.data(), file.size(), path);
    for (const std::string& name : zip.names()) {
      if (!name.ends_with("/data.pkl") || name.find('/') + 1 != name.size() - 8) continue;
      const auto bytes = zip.read(name);
      const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (text.find(kSvdModule) != std::string_view::npos) return "";
      return "the pickle names no " + std::string(kSvdModule) + " module";
    }
    return "the archive has no data.pkl";
  } catch (const Error& e) {
    return e.what();
  }
}

Model load_svd_llm(const std::string& path) {
  const TorchArchive archive(path);
  const HfConfig hf = read_config(archive);
  Model m;
  m.family = "svd_llm";
  m.source = path;
  m.config = hf.model;
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q_out = int64_t{c.n_heads} * c.head_dim, kv_out = int64_t{c.n_kv_heads} * c.head_dim;

  std::vector<std::string> names;
  for (const auto& [name, info] : archive.named_tensors()) names.push_back(name);
  TensorTaker t(names, [&](const std::string& name) { return archive.load_f32(name); }, path);
  // RoPE tables (inv_freq, cos/sin caches) are buffers of the pickled modules; they follow from the config.
  for (const std::string& name : names)
    if (name.find("rotary_emb.") != std::string::npos) t.skip(name);
  take_hf_embeddings_and_norms(m, t, path);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = m.layers[i];
    l.q = take_linear(t, archive, p + "self_attn.q", q_out, d);
    l.k = take_linear(t, archive, p + "self_attn.k", kv_out, d);
    l.v = take_linear(t, archive, p + "self_attn.v", kv_out, d);
    l.o = take_linear(t, archive, p + "self_attn.o", d, q_out);
    l.gate = take_linear(t, archive, p + "mlp.gate", f, d);
    l.up = take_linear(t, archive, p + "mlp.up", f, d);
    l.down = take_linear(t, archive, p + "mlp.down", d, f);
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
