#include "families/pickled_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "formats/zip_archive.h"

namespace fsvd {

namespace {

using json = nlohmann::json;
using pickle::Dict;
using pickle::Object;
using pickle::Value;

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

// The pickled model module, or null when the root is not {'model': module, ...}.
const Value* pickled_model(const TorchArchive& archive) {
  const auto* root = std::get_if<Dict*>(&archive.pickled().root());
  const Value* model = root ? (*root)->find(std::string_view("model")) : nullptr;
  return model && std::holds_alternative<Object*>(*model) ? model : nullptr;
}

}  // namespace

std::string torch_pickle_mismatch(const std::string& path, std::initializer_list<std::string_view> needles) {
  if (!std::filesystem::is_regular_file(path)) return "not a regular file";
  try {
    const MappedFile file(path);
    if (file.size() < 4 || std::memcmp(file.data(), "PK\3\4", 4) != 0) return "not a torch.save zip archive";
    const ZipArchive zip(file.data(), file.size(), path);
    for (const std::string& name : zip.names()) {
      if (!name.ends_with("/data.pkl") || name.find('/') + 1 != name.size() - 8) continue;
      const auto bytes = zip.read(name);
      const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      for (const std::string_view needle : needles)
        if (text.find(needle) == std::string_view::npos) return "the pickle names no " + std::string(needle);
      return "";
    }
    return "the archive has no data.pkl";
  } catch (const Error& e) {
    return e.what();
  }
}

HfConfig read_pickled_llama_config(const TorchArchive& archive, const std::string& family) {
  const std::string& path = archive.path();
  const Value* model = pickled_model(archive);
  check(model, path, "expected a whole-model save {'model': LlamaForCausalLM, ...}, got ",
        pickle::describe(archive.pickled().root()));
  const Object& module = *std::get<Object*>(*model);
  const std::string cls = module.cls ? std::string(module.cls->name) : "?";
  check(cls == "LlamaForCausalLM", path, family, " model class '", cls,
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

std::string pickled_module_class(const TorchArchive& archive, const std::string& path) {
  const Value* node = pickled_model(archive);
  for (size_t begin = 0; node && begin <= path.size();) {
    const size_t dot = std::min(path.find('.', begin), path.size());
    const Dict* state = object_state(node);
    const Value* children = state ? state->find(std::string_view("_modules")) : nullptr;
    const auto* dict = children ? std::get_if<Dict*>(children) : nullptr;
    node = dict ? (*dict)->find(std::string_view(path).substr(begin, dot - begin)) : nullptr;
    begin = dot + 1;
  }
  const auto* o = node ? std::get_if<Object*>(node) : nullptr;
  return o && (*o)->cls ? (*o)->cls->qualified() : "";
}

TensorTaker archive_tensors(const TorchArchive& archive) {
  std::vector<std::string> names;
  for (const auto& [name, info] : archive.named_tensors()) names.push_back(name);
  TensorTaker t(names, [&archive](const std::string& name) { return archive.load_f32(name); }, archive.path());
  for (const std::string& name : names)
    if (name.find("rotary_emb.") != std::string::npos) t.skip(name);
  return t;
}

}  // namespace fsvd
