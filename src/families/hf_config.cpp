#include "families/hf_config.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"
#include "families/config_json.h"
#include "families/json_reader.h"

namespace fsvd {

namespace {

using json = nlohmann::json;

void read_rope(const JsonReader& top, ModelConfig& c, const std::string& where) {
  c.rope_theta = top.real("rope_theta", 10000.0f);
  // transformers 5 nests theta and scaling in rope_parameters; older configs use rope_scaling.
  const char* key = top.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!top.has(key)) return;
  const JsonReader s = top.object(key);
  c.rope_theta = s.real("rope_theta", c.rope_theta);
  const std::string type = s.has("rope_type") ? s.string("rope_type")
                           : s.has("type")    ? s.string("type")
                                              : "default";
  if (type == "default") return;
  check(type == "llama3", where, "", key, " type '", type, "' is not supported (supported: default, llama3)");
  RopeScaling& r = c.rope_scaling;
  r.type = "llama3";
  r.factor = s.real("factor");
  r.low_freq_factor = s.real("low_freq_factor", 1.0f);
  r.high_freq_factor = s.real("high_freq_factor", 4.0f);
  r.original_max_position = s.integer("original_max_position_embeddings", 8192);
  check(r.factor > 0 && r.low_freq_factor > 0 && r.high_freq_factor > r.low_freq_factor &&
            r.original_max_position > 0,
        where, "llama3 ", key,
        " needs factor > 0, high_freq_factor > low_freq_factor > 0 and original_max_position_embeddings > 0 "
        "(got factor ",
        r.factor, ", low_freq_factor ", r.low_freq_factor, ", high_freq_factor ", r.high_freq_factor,
        ", original_max_position_embeddings ", r.original_max_position, ")");
}

}  // namespace

HfConfig parse_hf_config(const std::string& json_text, const std::string& where) {
  const json j = parse_json(json_text, where);
  check(j.is_object(), where, "must hold a JSON object, got ", j.type_name());
  const JsonReader r(j, where);

  HfConfig out;
  out.model_type = r.string("model_type");
  if (r.has("architectures")) out.architectures = r.strings("architectures");
  out.attention_bias = r.boolean("attention_bias", false);
  out.mlp_bias = r.boolean("mlp_bias", false);

  ModelConfig& c = out.model;
  c.hidden = r.integer("hidden_size");
  c.intermediate = r.integer("intermediate_size");
  c.n_layers = r.integer("num_hidden_layers");
  c.n_heads = r.integer("num_attention_heads");
  c.n_kv_heads = r.integer("num_key_value_heads", c.n_heads);
  c.vocab = r.integer("vocab_size");
  c.max_seq = r.integer("max_position_embeddings", 2048);  // transformers' LlamaConfig default
  if (r.has("head_dim")) {
    c.head_dim = r.integer("head_dim");
  } else {
    check(c.n_heads > 0 && c.hidden % c.n_heads == 0, where, "hidden_size ", c.hidden,
          " is not a multiple of num_attention_heads ", c.n_heads, " and no head_dim is given");
    c.head_dim = c.hidden / c.n_heads;
  }
  c.rms_eps = r.real("rms_norm_eps", 1e-6f);  // transformers' default
  c.tied_embeddings = r.boolean("tie_word_embeddings", false);
  if (r.has("hidden_act")) {
    const std::string act = r.string("hidden_act");
    check(act == "silu", where, "hidden_act '", act, "' is not supported (supported: silu)");
  }
  read_rope(r, c, where);
  // Full attention equals sliding-window attention while the whole context fits
  // in the window, so a window is honoured exactly by capping the context.
  if (r.has("sliding_window") && r.boolean("use_sliding_window", true)) {
    const int window = r.integer("sliding_window");
    check(window > 0, where, "sliding_window must be positive, got ", window);
    if (window < c.max_seq) c.max_seq = window;
  }
  check(c.max_seq > 0, where, "max_position_embeddings must be positive, got ", c.max_seq);
  c.validate(where);
  return out;
}

HfConfig parse_llama_config(const std::string& json_text, const std::string& where) {
  const HfConfig hf = parse_hf_config(json_text, where);
  check(hf.model_type == "llama", where, "model_type '", hf.model_type, "' is not supported (supported: llama)");
  return hf;
}

HfConfig read_llama_config(const std::string& path) { return parse_llama_config(read_file(path), path); }

}  // namespace fsvd
