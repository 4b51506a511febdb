#include "families/sentence_transformers.h"

#include <filesystem>

#include "core/error.h"
#include "families/config_json.h"
#include "families/json_reader.h"

namespace fsvd {

namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "sentence_transformers.models.";

Pooling read_pooling(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  check(j.is_object(), path, "must hold a JSON object");
  const JsonReader r(j, path);
  std::vector<Pooling> modes;
  if (r.boolean("pooling_mode_cls_token", false)) modes.push_back(Pooling::cls);
  if (r.boolean("pooling_mode_mean_tokens", false)) modes.push_back(Pooling::mean);
  if (r.boolean("pooling_mode_max_tokens", false)) modes.push_back(Pooling::max);
  for (const char* other : {"pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                            "pooling_mode_lasttoken"})
    check(!r.boolean(other, false), path, other, " is not supported (supported: cls, mean, max)");
  check(modes.size() == 1, path, "expected exactly one of pooling_mode_cls_token, pooling_mode_mean_tokens, ",
        "pooling_mode_max_tokens to be true, got ", modes.size());
  return modes[0];
}

void read_transformer_settings(const std::string& path, SentenceTransformerSettings& st) {
  if (!fs::exists(path)) return;
  const nlohmann::json j = read_json_file(path);
  check(j.is_object(), path, "must hold a JSON object");
  const JsonReader r(j, path);
  st.max_seq_length = r.integer("max_seq_length", 0);
  check(st.max_seq_length >= 0, path, "max_seq_length must not be negative");
  check(!r.boolean("do_lower_case", false), path,
        "do_lower_case (lower-casing before the tokenizer) is not supported");
}

}  // namespace

SentenceTransformerSettings read_sentence_transformers(const std::string& dir) {
  SentenceTransformerSettings st;
  st.model_dir = dir;
  const std::string modules_path = (fs::path(dir) / "modules.json").string();
  if (!fs::exists(modules_path)) return st;
  st.present = true;
  const nlohmann::json modules = read_json_file(modules_path);
  check(modules.is_array(), modules_path, "must hold a list of modules");
  bool transformer = false, pooling = false;
  for (const nlohmann::json& m : modules) {
    check(m.is_object(), modules_path, "every module must be an object");
    const JsonReader r(m, modules_path);
    const std::string type = r.string("type"), sub = r.has("path") ? r.string("path") : "";
    check(sub.find("..") == std::string::npos && !fs::path(sub).is_absolute(), modules_path, "module path '", sub,
          "' is not inside the model directory");
    const fs::path at = fs::path(dir) / sub;
    if (type == std::string(kPrefix) + "Transformer") {
      check(!transformer, modules_path, "more than one Transformer module");
      transformer = true;
      st.model_dir = sub.empty() ? dir : at.string();
      read_transformer_settings((at / "sentence_bert_config.json").string(), st);
    } else if (type == std::string(kPrefix) + "Pooling") {
      check(transformer && !pooling, modules_path, "the Pooling module must follow the Transformer, once");
      pooling = true;
      st.pooling = read_pooling((at / "config.json").string());
    } else if (type == std::string(kPrefix) + "Normalize") {
      st.normalize = true;
    } else {
      fail(modules_path, "module type '", type, "' is not supported (supported: Transformer, Pooling, Normalize)");
    }
  }
  check(transformer, modules_path, "no sentence_transformers.models.Transformer module");
  return st;
}

}  // namespace fsvd
